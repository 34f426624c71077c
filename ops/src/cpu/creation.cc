// The CPU creation table: fills, ranges, Philox random numbers (the scheme
// described in ops/src/creation.cc) and copies of host memory.
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include <tide/ops/normal_f32.h>
#include <tide/ops/philox.h>

#include "../kernels.h"
#include "vector_clones.h"

namespace tide::kernels {

namespace {

void fill(DType dtype, void* out, std::int64_t n, double value, void*) {
  dispatch_dtype_or_bool(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T v = static_cast<T>(value);
    T* o = static_cast<T*>(out);
    for (std::int64_t i = 0; i < n; ++i) o[i] = v;
  });
}

void arange(DType dtype, void* out, std::int64_t n, double start, double step, void*) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out);
    for (std::int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
}

/// The four values of block `counter`.
std::array<double, 4> philox_block(RandomKind kind, std::uint64_t counter, std::uint64_t seed) {
  const philox::Block b = philox::philox4x32_10(counter, seed);
  std::array<double, 4> out;
  if (kind == RandomKind::uniform) {
    for (int k = 0; k < 4; ++k) out[static_cast<std::size_t>(k)] = philox::to_unit(b.v[k]);
    return out;
  }
  for (int pair = 0; pair < 2; ++pair) {
    // 1 - u1 lies in (0, 1], so the log is finite.
    const double u1 = philox::to_unit(b.v[2 * pair]), u2 = philox::to_unit(b.v[2 * pair + 1]);
    const double r = std::sqrt(-2.0 * std::log(1.0 - u1));
    const double theta = 2.0 * std::numbers::pi * u2;
    out[static_cast<std::size_t>(2 * pair)] = r * std::cos(theta);
    out[static_cast<std::size_t>(2 * pair + 1)] = r * std::sin(theta);
  }
  return out;
}

template <typename T>
void random_t(RandomKind kind, T* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset) {
  // A uniform double within 2^-25 of 1 rounds to 1.0f: keep [0, 1).
  constexpr T kBelowOne = 1 - std::numeric_limits<T>::epsilon() / 2;
  std::int64_t i = 0;
  while (i < n) {
    const std::uint64_t j = offset + static_cast<std::uint64_t>(i);
    const std::array<double, 4> block = philox_block(kind, j / 4, seed);
    for (std::uint64_t lane = j % 4; lane < 4 && i < n; ++lane, ++i) {
      const T v = static_cast<T>(block[lane]);
      out[i] = (kind == RandomKind::uniform && v >= T(1)) ? kBelowOne : v;
    }
  }
}

/// The four f32 normals of block `counter`.
void normal_f32_block(std::uint64_t counter, std::uint64_t seed, float* v) {
  const philox::Block b = philox::philox4x32_10(counter, seed);
  normal_f32::pair(b.v[0], b.v[1], v[0], v[1]);
  normal_f32::pair(b.v[2], b.v[3], v[2], v[3]);
}

/// f32 normals: whole blocks in runs of kRun, words first and then the
/// transform, each a loop the compiler vectorises; partial blocks at either
/// end one at a time.
TIDE_VECTOR_CLONES
void normal_f32(float* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset) {
  constexpr std::int64_t kRun = 64;
  std::int64_t i = 0;
  float v[4];
  while (i < n && (offset + static_cast<std::uint64_t>(i)) % 4 != 0) {
    const std::uint64_t j = offset + static_cast<std::uint64_t>(i);
    normal_f32_block(j / 4, seed, v);
    for (std::uint64_t lane = j % 4; lane < 4 && i < n; ++lane) out[i++] = v[lane];
  }
  alignas(64) std::uint32_t w[4][kRun];
  alignas(64) float z[4][kRun];
  while (n - i >= 4 * kRun) {
    const std::uint64_t first = (offset + static_cast<std::uint64_t>(i)) / 4;
    for (std::int64_t k = 0; k < kRun; ++k) {
      const philox::Block b = philox::philox4x32_10(first + static_cast<std::uint64_t>(k), seed);
      for (int l = 0; l < 4; ++l) w[l][k] = b.v[l];
    }
    for (std::int64_t k = 0; k < kRun; ++k) {
      normal_f32::pair(w[0][k], w[1][k], z[0][k], z[1][k]);
      normal_f32::pair(w[2][k], w[3][k], z[2][k], z[3][k]);
    }
    for (std::int64_t k = 0; k < kRun; ++k)
      for (int l = 0; l < 4; ++l) out[i + 4 * k + l] = z[l][k];
    i += 4 * kRun;
  }
  while (i < n) {
    normal_f32_block((offset + static_cast<std::uint64_t>(i)) / 4, seed, v);
    for (int lane = 0; lane < 4 && i < n; ++lane) out[i++] = v[lane];
  }
}

void random(RandomKind kind, DType dtype, void* out, std::int64_t n, std::uint64_t seed,
            std::uint64_t offset, void*) {
  // The frontend admits floating dtypes only.
  if (dtype == DType::f64) random_t(kind, static_cast<double*>(out), n, seed, offset);
  else if (kind == RandomKind::normal) normal_f32(static_cast<float*>(out), n, seed, offset);
  else random_t(kind, static_cast<float*>(out), n, seed, offset);
}

void from_host(void* dst, const void* src, std::size_t nbytes, void*) {
  if (nbytes != 0) std::memcpy(dst, src, nbytes);
}

}  // namespace

const Creation cpu_creation{&fill, &arange, &random, &from_host};

}  // namespace tide::kernels
