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

/// The integer dtypes (i32, i64): arithmetic wraps around.
template <typename T>
inline constexpr bool kIsInt = std::is_integral_v<T>;

template <typename T>
TIDE_HOST_DEVICE inline T wrap(std::make_unsigned_t<T> x) { return static_cast<T>(x); }
template <typename T>
TIDE_HOST_DEVICE inline std::make_unsigned_t<T> bits(T x) { return static_cast<std::make_unsigned_t<T>>(x); }

struct Add {
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (kIsInt<T>) return wrap<T>(bits(x) + bits(y));
    else return x + y;
  }
};
struct Sub {
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (kIsInt<T>) return wrap<T>(bits(x) - bits(y));
    else return x - y;
  }
};
struct Mul {
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (kIsInt<T>) return wrap<T>(bits(x) * bits(y));
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
    if constexpr (kIsInt<T>) {
#ifdef __CUDA_ARCH__
      if (y == 0) return 0;
      if (y == -1) return wrap<T>(std::make_unsigned_t<T>(0) - bits(x));
#else
      if (y == 0) throw ValueError("integer division by zero");
      if (y == -1 && x == std::numeric_limits<T>::min())
        throw ValueError(sizeof(T) == 4 ? "integer division overflow (INT32_MIN / -1)"
                                        : "integer division overflow (INT64_MIN / -1)");
#endif
    }
    return x / y;
  }
};
/// A value converted to D (to_dtype). Into an integer dtype, a floating
/// value truncates toward zero, NaN gives 0, and a value outside D's range
/// (a float's or a wider integer's) saturates to D's bound: the same result
/// on every device. (Between floating types the conversion is IEEE's: an f64
/// beyond f32's range becomes an infinity.) Into bool, nonzero (NaN too)
/// is true; from bool, true is 1.
template <typename D>
struct ConvertTo {
  template <typename S>
  TIDE_HOST_DEVICE D operator()(S x) const {
    if constexpr (std::is_same_v<D, bool>) {
      return x != S(0);  // NaN is true, as in numpy and torch
    } else if constexpr (std::is_integral_v<D> && !std::is_same_v<S, D>) {
      constexpr D lo = std::numeric_limits<D>::min(), hi = std::numeric_limits<D>::max();
      if constexpr (std::is_floating_point_v<S>) {
        if (x != x) return D(0);
        // -2^31 (-2^63) is exact in every floating type; 2^31 (2^63) bounds above.
        if (x <= static_cast<S>(lo)) return lo;
        if (x >= -static_cast<S>(lo)) return hi;
        return static_cast<D>(x);
      } else if constexpr (sizeof(S) > sizeof(D)) {
        return x < S(lo) ? lo : (x > S(hi) ? hi : static_cast<D>(x));
      } else {
        return static_cast<D>(x);  // a wider integer type holds every value
      }
    } else {
      return static_cast<D>(x);
    }
  }
};

/// Comparisons: true or false, written as a bool tensor (the tables give
/// their loops a bool output). NaN compares false, except that it is not
/// equal to anything (Ne gives true).
struct Eq {
  static constexpr bool kCompares = true;
  template <typename T>
  TIDE_HOST_DEVICE bool operator()(T x, T y) const { return x == y; }
};
struct Ne {
  static constexpr bool kCompares = true;
  template <typename T>
  TIDE_HOST_DEVICE bool operator()(T x, T y) const { return x != y; }
};
struct Gt {
  static constexpr bool kCompares = true;
  template <typename T>
  TIDE_HOST_DEVICE bool operator()(T x, T y) const { return x > y; }
};
struct Ge {
  static constexpr bool kCompares = true;
  template <typename T>
  TIDE_HOST_DEVICE bool operator()(T x, T y) const { return x >= y; }
};
struct Lt {
  static constexpr bool kCompares = true;
  template <typename T>
  TIDE_HOST_DEVICE bool operator()(T x, T y) const { return x < y; }
};
struct Le {
  static constexpr bool kCompares = true;
  template <typename T>
  TIDE_HOST_DEVICE bool operator()(T x, T y) const { return x <= y; }
};

/// Logical and, or, xor: nonzero (NaN too) is true; bool results.
struct LogicalAnd {
  static constexpr bool kCompares = true;
  template <typename T>
  TIDE_HOST_DEVICE bool operator()(T x, T y) const { return x != T(0) && y != T(0); }
};
struct LogicalOr {
  static constexpr bool kCompares = true;
  template <typename T>
  TIDE_HOST_DEVICE bool operator()(T x, T y) const { return x != T(0) || y != T(0); }
};
struct LogicalXor {
  static constexpr bool kCompares = true;
  template <typename T>
  TIDE_HOST_DEVICE bool operator()(T x, T y) const { return (x != T(0)) != (y != T(0)); }
};

/// Whether a functor is a comparison or logical op (its output is bool, not
/// T; its inputs may be bool too).
template <typename F>
constexpr bool compares_op() {
  if constexpr (requires { F::kCompares; }) return F::kCompares;
  else return false;
}
template <typename F>
inline constexpr bool kComparesOp = compares_op<F>();

/// The larger (Maximum) or smaller (Minimum) of x and y; a NaN in either
/// gives NaN (as numpy's maximum and torch's).
template <bool Larger>
struct Extreme {
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x, T y) const {
    if constexpr (!kIsInt<T>) {
      if (x != x) return x;
      if (y != y) return y;
    }
    return (Larger ? x > y : x < y) ? x : y;
  }
};
using Maximum = Extreme<true>;
using Minimum = Extreme<false>;

/// Whether a functor takes floating dtypes only (kFloatingOnly): the
/// frontend checks, and the tables give the integer dtypes a kernel that
/// throws.
template <typename F>
constexpr bool floating_only_op() {
  if constexpr (requires { F::kFloatingOnly; }) return F::kFloatingOnly;
  else return false;
}
template <typename F>
inline constexpr bool kFloatingOnlyOp = floating_only_op<F>();

/// x to the power y (floating dtypes): the C library's pow on the host,
/// CUDA's powf / pow on the device.
struct Pow {
  static constexpr bool kFloatingOnly = true;
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x, T y) const {
#ifdef __CUDA_ARCH__
    if constexpr (std::is_same_v<T, float>) return powf(x, y);
    else return ::pow(x, y);
#else
    return std::pow(x, y);
#endif
  }
};

/// f(x, s) or, with Reversed, f(s, x): scalar variants of the binary ops.
template <typename F, bool Reversed, typename T>
struct WithScalar {
  T s;
  TIDE_HOST_DEVICE auto operator()(T x) const { return Reversed ? F{}(s, x) : F{}(x, s); }
};

struct Neg {
  static constexpr bool kFloatingOnly = false;
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x) const {
    if constexpr (kIsInt<T>) return wrap<T>(std::make_unsigned_t<T>(0) - bits(x));
    else return -x;
  }
};
/// exp and log, floating dtypes only (kFloatingOnly: the frontend checks,
/// and the tables give the integer dtypes a kernel that throws). On the device CUDA's
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

/// sqrt, tanh and the logistic sigmoid 1 / (1 + exp(-x)), floating dtypes
/// only, with the same device and host functions as Libm. The sigmoid is
/// 0 or 1 at the extremes, never NaN (exp overflows to inf: 1 / inf = 0).
enum class Smooth { sqrt, tanh, sigmoid };
template <Smooth Fn>
struct SmoothFn {
  static constexpr bool kFloatingOnly = true;
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x) const {
#ifdef __CUDA_ARCH__
    // Each in T's own precision, as on the host (no detour through double).
    if constexpr (std::is_same_v<T, float>) {
      if constexpr (Fn == Smooth::sqrt) return sqrtf(x);
      else if constexpr (Fn == Smooth::tanh) return tanhf(x);
      else return 1.0f / (1.0f + expf(-x));
    } else {
      if constexpr (Fn == Smooth::sqrt) return ::sqrt(x);
      else if constexpr (Fn == Smooth::tanh) return ::tanh(x);
      else return 1.0 / (1.0 + ::exp(-x));
    }
#else
    if constexpr (Fn == Smooth::sqrt) return std::sqrt(x);
    else if constexpr (Fn == Smooth::tanh) return std::tanh(x);
    else return T(1) / (T(1) + std::exp(-x));
#endif
  }
};
using Sqrt = SmoothFn<Smooth::sqrt>;
using Tanh = SmoothFn<Smooth::tanh>;
using Sigmoid = SmoothFn<Smooth::sigmoid>;

/// |x|; an integer minimum wraps to itself, as negation does. NaN stays NaN
/// and -0 becomes +0.
struct Abs {
  static constexpr bool kFloatingOnly = false;
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x) const {
    if constexpr (kIsInt<T>) return x < T(0) ? wrap<T>(std::make_unsigned_t<T>(0) - bits(x)) : x;
#ifdef __CUDA_ARCH__
    else if constexpr (std::is_same_v<T, float>) return fabsf(x);
    else return ::fabs(x);
#else
    else return std::fabs(x);
#endif
  }
};

/// max(x, 0); NaN stays NaN and -0 stays -0.
struct Relu {
  static constexpr bool kFloatingOnly = false;
  template <typename T>
  TIDE_HOST_DEVICE T operator()(T x) const { return x < T(0) ? T(0) : x; }
};

/// where(cond, a, b): a where cond is not 0 (NaN counts as true, as in
/// numpy), else b. cond's dtype may differ from a's and b's.
struct Where {
  template <typename C, typename T>
  TIDE_HOST_DEVICE T operator()(C c, T a, T b) const { return c != C(0) ? a : b; }
};

}  // namespace tide::functors
