// The f32 Box-Muller transform of randn: two Philox words to two standard
// normals, in float arithmetic only (add, subtract, multiply, divide, square
// root, integer and bit operations), each step rounded once. IEEE 754 fixes
// every one of those results, so the CPU and CUDA kernels, which both call
// this, give the same bits; nothing here may be contracted into an fma (the
// device spells each operation with its _rn intrinsic, the host library is
// compiled with -ffp-contract=off). No libm call: the log and the sine and
// cosine are polynomials, which also lets the CPU loop vectorise.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TIDE_NORMAL_HD __host__ __device__
#else
#define TIDE_NORMAL_HD
#endif

namespace tide::normal_f32 {

#if defined(__CUDA_ARCH__)
TIDE_NORMAL_HD inline float add(float a, float b) { return __fadd_rn(a, b); }
TIDE_NORMAL_HD inline float sub(float a, float b) { return __fsub_rn(a, b); }
TIDE_NORMAL_HD inline float mul(float a, float b) { return __fmul_rn(a, b); }
TIDE_NORMAL_HD inline float div(float a, float b) { return __fdiv_rn(a, b); }
TIDE_NORMAL_HD inline float root(float a) { return __fsqrt_rn(a); }
TIDE_NORMAL_HD inline std::uint32_t bits(float f) { return __float_as_uint(f); }
TIDE_NORMAL_HD inline float from_bits(std::uint32_t u) { return __uint_as_float(u); }
#else
inline float add(float a, float b) { return a + b; }
inline float sub(float a, float b) { return a - b; }
inline float mul(float a, float b) { return a * b; }
inline float div(float a, float b) { return a / b; }
inline float root(float a) { return __builtin_sqrtf(a); }  // a >= 0: no errno to set
inline std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
#endif

/// -2 ln(u) for u = v / 2^31, v = (w >> 1) | 1 rounded to float: u lies in
/// (0, 1] (2^-31 at the least, so the radius is at most 6.56). v = 2^e m with
/// m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <
/// 0.172, by its series to s^11 (truncation below 4e-10); e ln 2 is exact in
/// its high part.
TIDE_NORMAL_HD inline float minus_two_log_unit(std::uint32_t w) {
  const float v = static_cast<float>(static_cast<std::int32_t>((w >> 1) | 1u));  // [1, 2^31]
  const std::uint32_t b = bits(v);
  // v's mantissa as m in [1, 2); above sqrt(2) it is halved and e raised.
  const std::uint32_t mb = (b & 0x007fffffu) | 0x3f800000u;
  const std::uint32_t big = mb > 0x3fb504f3u;  // m > sqrt(2)
  const float m = from_bits(mb - (big << 23));
  const std::int32_t e = static_cast<std::int32_t>((b >> 23) + big) - 127 - 31;  // u = 2^e m
  const float s = div(sub(m, 1.0f), add(m, 1.0f));
  const float s2 = mul(s, s);
  float p = 1.0f / 11.0f;
  p = add(1.0f / 9.0f, mul(s2, p));
  p = add(1.0f / 7.0f, mul(s2, p));
  p = add(1.0f / 5.0f, mul(s2, p));
  p = add(1.0f / 3.0f, mul(s2, p));
  const float two_s = add(s, s);
  const float ln_m = add(two_s, mul(two_s, mul(s2, p)));
  // ln 2 = kLn2Hi + kLn2Lo; kLn2Hi has 16 significant bits, so e * kLn2Hi is
  // exact for |e| <= 32.
  constexpr float kLn2Hi = 0.693145751953125f, kLn2Lo = 1.42860682e-06f;
  const float ef = static_cast<float>(e);
  const float ln_u = add(mul(ef, kLn2Hi), add(mul(ef, kLn2Lo), ln_m));
  return mul(-2.0f, ln_u);
}

/// (cos t, sin t) for the angle t = q pi/2 + x of word w: q is its top two
/// bits and x = (f - 1/2) pi/2 with f its next 22 bits / 2^22, so t is
/// uniform over a whole turn (the turn starts at -pi/4, which a normal pair,
/// being symmetric under rotation, does not notice). sin and cos of x, |x| <=
/// pi/4, by their Taylor series to x^11 and x^12 (truncation below 2e-9).
TIDE_NORMAL_HD inline void cos_sin_turn(std::uint32_t w, float& c, float& s) {
  const std::uint32_t q = w >> 30;
  const float f = mul(static_cast<float>(static_cast<std::int32_t>((w >> 8) & 0x3fffffu)), 1.0f / 4194304.0f);
  const float x = mul(sub(f, 0.5f), 1.57079637f);
  const float x2 = mul(x, x);
  float ps = -1.0f / 39916800.0f;
  ps = add(1.0f / 362880.0f, mul(x2, ps));
  ps = add(-1.0f / 5040.0f, mul(x2, ps));
  ps = add(1.0f / 120.0f, mul(x2, ps));
  ps = add(-1.0f / 6.0f, mul(x2, ps));
  const float sx = add(x, mul(mul(x, x2), ps));
  float pc = 1.0f / 479001600.0f;
  pc = add(-1.0f / 3628800.0f, mul(x2, pc));
  pc = add(1.0f / 40320.0f, mul(x2, pc));
  pc = add(-1.0f / 720.0f, mul(x2, pc));
  pc = add(1.0f / 24.0f, mul(x2, pc));
  pc = add(-0.5f, mul(x2, pc));
  const float cx = add(1.0f, mul(x2, pc));
  // Rotate by q quarter turns, (cos, sin) -> (-sin, cos) per quarter: an odd
  // q swaps the two, q = 1 or 2 negates the cosine, q = 2 or 3 the sine. In
  // bit operations, without a branch, so that the CPU loop vectorises.
  const std::uint32_t swap = 0u - (q & 1u);
  const std::uint32_t bc = bits(cx), bs = bits(sx);
  const std::uint32_t c0 = (bs & swap) | (bc & ~swap), s0 = (bc & swap) | (bs & ~swap);
  c = from_bits(c0 ^ (((q ^ (q >> 1)) & 1u) << 31));
  s = from_bits(s0 ^ ((q >> 1) << 31));
}

/// The pair of normals of words (w1, w2): r cos t and r sin t with r =
/// sqrt(-2 ln u(w1)) and t the angle of w2.
TIDE_NORMAL_HD inline void pair(std::uint32_t w1, std::uint32_t w2, float& z0, float& z1) {
  const float r = root(minus_two_log_unit(w1));
  float c, s;
  cos_sin_turn(w2, c, s);
  z0 = mul(r, c);
  z1 = mul(r, s);
}

}  // namespace tide::normal_f32
