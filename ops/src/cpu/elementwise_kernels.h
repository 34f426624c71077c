// CPU kernels for elementwise ops: plain loops over contiguous arrays that
// the compiler vectorizes. The functors are stateless (or hold one scalar),
// so a closure over them stays small.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <tide/core/error.h>

namespace tide::cpu_kernels {

template <typename T, typename F>
void map1(const T* a, T* out, std::int64_t n, F f) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = f(a[i]);
}

template <typename T, typename F>
void map2(const T* a, const T* b, T* out, std::int64_t n, F f) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}

// i32 arithmetic wraps around (two's complement), like the hardware and
// NumPy: signed overflow in C++ would be undefined, so it goes through uint32.
inline std::int32_t wrap(std::uint32_t x) { return static_cast<std::int32_t>(x); }
inline std::uint32_t bits(std::int32_t x) { return static_cast<std::uint32_t>(x); }

/// 1 where equal, else 0.
struct Eq {
  template <typename T>
  T operator()(T x, T y) const { return x == y ? T(1) : T(0); }
};

struct Add {
  template <typename T>
  T operator()(T x, T y) const {
    if constexpr (std::is_same_v<T, std::int32_t>) return wrap(bits(x) + bits(y));
    else return x + y;
  }
};
struct Sub {
  template <typename T>
  T operator()(T x, T y) const {
    if constexpr (std::is_same_v<T, std::int32_t>) return wrap(bits(x) - bits(y));
    else return x - y;
  }
};
struct Mul {
  template <typename T>
  T operator()(T x, T y) const {
    if constexpr (std::is_same_v<T, std::int32_t>) return wrap(bits(x) * bits(y));
    else return x * y;
  }
};
/// i32 division truncates; a zero divisor (and INT_MIN / -1, which traps on
/// x86) throws, which the engine records as the op's failure.
struct Div {
  template <typename T>
  T operator()(T x, T y) const {
    if constexpr (std::is_same_v<T, std::int32_t>) {
      if (y == 0) throw ValueError("integer division by zero");
      if (y == -1 && x == std::numeric_limits<std::int32_t>::min())
        throw ValueError("integer division overflow (INT32_MIN / -1)");
    }
    return x / y;
  }
};

/// f(x, s) or, with Reversed, f(s, x): scalar variants of the binary ops.
template <typename F, bool Reversed, typename T>
struct WithScalar {
  T s;
  T operator()(T x) const { return Reversed ? F{}(s, x) : F{}(x, s); }
};

struct Neg {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, std::int32_t>) return wrap(0u - bits(x));
    else return -x;
  }
};
struct Exp {
  template <typename T>
  T operator()(T x) const { return std::exp(x); }
};
struct Log {
  template <typename T>
  T operator()(T x) const { return std::log(x); }
};
/// max(x, 0); NaN stays NaN.
struct Relu {
  template <typename T>
  T operator()(T x) const { return x < T(0) ? T(0) : x; }
};

}  // namespace tide::cpu_kernels
