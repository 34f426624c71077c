// The elementwise functors, written once: the CPU loops
// (cpu/elementwise.cc) and the CUDA kernels (cuda/elementwise_kernels.cu)
// instantiate the same structs through elementwise_table.h. A new
// elementwise op is a functor here, its line in the op list of kernels.h,
// its public declaration and its one-line definition in elementwise.cc.
//
// i32 arithmetic wraps around (two's complement), like the hardware and
// NumPy: signed overflow in C++ would be undefined, so it goes through
// uint32. Where the host throws from inside a kernel (an i32 division by
// zero) a device kernel cannot, so __CUDA_ARCH__ picks a defined value there.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <tide/core/error.h>

#include "host_device.h"

namespace tide::functors {

template <typename T>
inline constexpr bool kIsI32 = std::is_same_v<T, std::int32_t>;

TIDE_HOST_DEVICE inline std::int32_t wrap(std::uint32_t x) { return static_cast<std::int32_t>(x); }
TIDE_HOST_DEVICE inline std::uint32_t bits(std::int32_t x) { return static_cast<std::uint32_t>(x); }

struct Add {
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (kIsI32<T>) return wrap(bits(x) + bits(y));
    else return x + y;
  }
};
struct Sub {
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (kIsI32<T>) return wrap(bits(x) - bits(y));
    else return x - y;
  }
};
struct Mul {
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (kIsI32<T>) return wrap(bits(x) * bits(y));
    else return x * y;
  }
};
/// i32 division truncates. On the host a zero divisor (and INT_MIN / -1,
/// which traps on x86) throws, which the engine records as the op's failure.
/// A kernel cannot report either without the host waiting for it, so on the
/// device both get a defined value instead of the hardware's unspecified
/// one: x / 0 is 0, and x / -1 is the wrapped negation (INT32_MIN stays
/// INT32_MIN). Floating division is IEEE (nvcc's default -prec-div=true
/// rounds it correctly).
struct Div {
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (kIsI32<T>) {
#ifdef __CUDA_ARCH__
      if (y == 0) return 0;
      if (y == -1) return wrap(0u - bits(x));
#else
      if (y == 0) throw ValueError("integer division by zero");
      if (y == -1 && x == std::numeric_limits<std::int32_t>::min())
        throw ValueError("integer division overflow (INT32_MIN / -1)");
#endif
    }
    return x / y;
  }
};
/// 1 where equal, else 0.
struct Eq {
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x, T y) const { return x == y ? T(1) : T(0); }
};

/// f(x, s) or, with Reversed, f(s, x): scalar variants of the binary ops.
template <typename F, bool Reversed, typename T>
struct WithScalar {
  T s;
  TIDE_HOST_DEVICE T operator()(T x) const { return Reversed ? F{}(s, x) : F{}(x, s); }
};

struct Neg {
  static constexpr bool kFloatingOnly = false;
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x) const {
    if constexpr (kIsI32<T>) return wrap(0u - bits(x));
    else return -x;
  }
};
/// exp and log, floating dtypes only (kFloatingOnly: the frontend checks,
/// and the tables give i32 a kernel that throws). On the device CUDA's
/// expf/logf (f32) and exp/log (f64), on the host the C++ library's.
enum class Transcendental { exp, log };
template <Transcendental Fn>
struct Libm {
  static constexpr bool kFloatingOnly = true;
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x) const {
    constexpr bool kExp = Fn == Transcendental::exp;
#ifdef __CUDA_ARCH__
    if constexpr (std::is_same_v<T, float>) return kExp ? expf(x) : logf(x);
    else return kExp ? ::exp(x) : ::log(x);
#else
    return kExp ? std::exp(x) : std::log(x);
#endif
  }
};
using Exp = Libm<Transcendental::exp>;
using Log = Libm<Transcendental::log>;

/// max(x, 0); NaN stays NaN and -0 stays -0.
struct Relu {
  static constexpr bool kFloatingOnly = false;
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x) const { return x < T(0) ? T(0) : x; }
};

}  // namespace tide::functors
