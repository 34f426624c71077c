// CUDA elementwise kernels: grid-stride loops over 16-byte packs (four f32
// or i32, two f64) when every pointer is 16-byte aligned, then a scalar tail;
// a scalar loop otherwise. No __restrict__: in-place ops pass the same
// storage as input and output, and each element is read before it is written
// by the same thread.
#include "elementwise_kernels.h"

#include <cstdint>
#include <type_traits>

#include <tide/core/cuda_check.h>
#include <tide/core/error.h>

#include "grid_util.cuh"

namespace tide::cuda_kernels {

namespace {

// The device twins of cpu_kernels' functors. i32 goes through uint32 so
// overflow wraps (two's complement) as on the CPU.
__device__ inline std::int32_t wrap(std::uint32_t x) { return static_cast<std::int32_t>(x); }
__device__ inline std::uint32_t bits(std::int32_t x) { return static_cast<std::uint32_t>(x); }

template <typename T>
inline constexpr bool kIsI32 = std::is_same_v<T, std::int32_t>;

struct Add {
  template <typename T>
  __device__ T operator()(T x, T y) const {
    if constexpr (kIsI32<T>) return wrap(bits(x) + bits(y));
    else return x + y;
  }
};
struct Sub {
  template <typename T>
  __device__ T operator()(T x, T y) const {
    if constexpr (kIsI32<T>) return wrap(bits(x) - bits(y));
    else return x - y;
  }
};
struct Mul {
  template <typename T>
  __device__ T operator()(T x, T y) const {
    if constexpr (kIsI32<T>) return wrap(bits(x) * bits(y));
    else return x * y;
  }
};
/// The CPU throws on an i32 zero divisor and on INT32_MIN / -1; a kernel
/// cannot report either without the host waiting for it, so both get a
/// defined value instead of the hardware's unspecified one: x / 0 is 0, and
/// x / -1 is the wrapped negation (INT32_MIN stays INT32_MIN). Floating
/// division is IEEE (nvcc's default -prec-div=true rounds it correctly).
struct Div {
  template <typename T>
  __device__ T operator()(T x, T y) const {
    if constexpr (kIsI32<T>) {
      if (y == 0) return 0;
      if (y == -1) return wrap(0u - bits(x));
    }
    return x / y;
  }
};
struct Eq {
  template <typename T>
  __device__ T operator()(T x, T y) const { return x == y ? T(1) : T(0); }
};

struct Neg {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (kIsI32<T>) return wrap(0u - bits(x));
    else return -x;
  }
};
struct Exp {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return expf(x);
    else return ::exp(x);
  }
};
struct Log {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return logf(x);
    else return ::log(x);
  }
};
/// max(x, 0) written as the CPU writes it, so NaN stays NaN and -0 stays -0.
struct Relu {
  template <typename T>
  __device__ T operator()(T x) const { return x < T(0) ? T(0) : x; }
};

template <typename F, bool Reversed, typename T>
struct WithScalar {
  T s;
  __device__ T operator()(T x) const { return Reversed ? F{}(s, x) : F{}(x, s); }
};

template <typename T>
struct alignas(16) Pack {
  static constexpr int kWidth = 16 / sizeof(T);
  T v[kWidth];
};

template <typename T, bool Vectorized, typename F>
__global__ void map1_kernel(const T* a, T* out, std::int64_t n, F f) {
  const std::int64_t first = first_index(), stride = grid_stride();
  std::int64_t tail = 0;
  if constexpr (Vectorized) {
    constexpr int kW = Pack<T>::kWidth;
    const std::int64_t packs = n / kW;
    const auto* ap = reinterpret_cast<const Pack<T>*>(a);
    auto* op = reinterpret_cast<Pack<T>*>(out);
    for (std::int64_t i = first; i < packs; i += stride) {
      Pack<T> x = ap[i];
#pragma unroll
      for (int k = 0; k < kW; ++k) x.v[k] = f(x.v[k]);
      op[i] = x;
    }
    tail = packs * kW;
  }
  for (std::int64_t i = tail + first; i < n; i += stride) out[i] = f(a[i]);
}

template <typename T, bool Vectorized, typename F>
__global__ void map2_kernel(const T* a, const T* b, T* out, std::int64_t n, F f) {
  const std::int64_t first = first_index(), stride = grid_stride();
  std::int64_t tail = 0;
  if constexpr (Vectorized) {
    constexpr int kW = Pack<T>::kWidth;
    const std::int64_t packs = n / kW;
    const auto* ap = reinterpret_cast<const Pack<T>*>(a);
    const auto* bp = reinterpret_cast<const Pack<T>*>(b);
    auto* op = reinterpret_cast<Pack<T>*>(out);
    for (std::int64_t i = first; i < packs; i += stride) {
      Pack<T> x = ap[i];
      const Pack<T> y = bp[i];
#pragma unroll
      for (int k = 0; k < kW; ++k) x.v[k] = f(x.v[k], y.v[k]);
      op[i] = x;
    }
    tail = packs * kW;
  }
  for (std::int64_t i = tail + first; i < n; i += stride) out[i] = f(a[i], b[i]);
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

/// The grid covers packs when vectorized (a quarter or half of n), elements
/// otherwise.
template <typename T>
unsigned grid_of(std::int64_t n, bool vectorized) {
  return grid_for(vectorized ? (n + Pack<T>::kWidth - 1) / Pack<T>::kWidth : n);
}

template <typename T, typename F>
void map1(const void* a, void* out, std::int64_t n, F f, void* stream) {
  if (n == 0) return;
  const auto* ta = static_cast<const T*>(a);
  auto* to = static_cast<T*>(out);
  const bool vec = aligned16(a) && aligned16(out);
  if (vec) map1_kernel<T, true><<<grid_of<T>(n, true), kThreads, 0, as_stream(stream)>>>(ta, to, n, f);
  else map1_kernel<T, false><<<grid_of<T>(n, false), kThreads, 0, as_stream(stream)>>>(ta, to, n, f);
  TIDE_CUDA_LAUNCH_CHECK();
}

template <typename T, typename F>
void map2(const void* a, const void* b, void* out, std::int64_t n, F f, void* stream) {
  if (n == 0) return;
  const auto* ta = static_cast<const T*>(a);
  const auto* tb = static_cast<const T*>(b);
  auto* to = static_cast<T*>(out);
  const bool vec = aligned16(a) && aligned16(b) && aligned16(out);
  if (vec) map2_kernel<T, true><<<grid_of<T>(n, true), kThreads, 0, as_stream(stream)>>>(ta, tb, to, n, f);
  else map2_kernel<T, false><<<grid_of<T>(n, false), kThreads, 0, as_stream(stream)>>>(ta, tb, to, n, f);
  TIDE_CUDA_LAUNCH_CHECK();
}

template <typename T>
void binary_t(BinaryOp op, const void* a, const void* b, void* out, std::int64_t n, void* s) {
  switch (op) {
    case BinaryOp::add: return map2<T>(a, b, out, n, Add{}, s);
    case BinaryOp::sub: return map2<T>(a, b, out, n, Sub{}, s);
    case BinaryOp::mul: return map2<T>(a, b, out, n, Mul{}, s);
    case BinaryOp::div: return map2<T>(a, b, out, n, Div{}, s);
    case BinaryOp::eq: return map2<T>(a, b, out, n, Eq{}, s);
  }
  throw Error("launch_binary: unknown op");
}

template <bool Reversed, typename T>
void scalar_t(BinaryOp op, const void* a, T s, void* out, std::int64_t n, void* st) {
  switch (op) {
    case BinaryOp::add: return map1<T>(a, out, n, WithScalar<Add, Reversed, T>{s}, st);
    case BinaryOp::sub: return map1<T>(a, out, n, WithScalar<Sub, Reversed, T>{s}, st);
    case BinaryOp::mul: return map1<T>(a, out, n, WithScalar<Mul, Reversed, T>{s}, st);
    case BinaryOp::div: return map1<T>(a, out, n, WithScalar<Div, Reversed, T>{s}, st);
    case BinaryOp::eq: return map1<T>(a, out, n, WithScalar<Eq, Reversed, T>{s}, st);
  }
  throw Error("launch_scalar: unknown op");
}

template <typename T>
void unary_t(UnaryOp op, const void* a, void* out, std::int64_t n, void* s) {
  switch (op) {
    case UnaryOp::neg: return map1<T>(a, out, n, Neg{}, s);
    case UnaryOp::relu: return map1<T>(a, out, n, Relu{}, s);
    case UnaryOp::exp:
    case UnaryOp::log:
      if constexpr (kIsI32<T>) {
        throw DTypeError("exp and log need a floating dtype (f32 or f64)");
      } else {
        if (op == UnaryOp::exp) return map1<T>(a, out, n, Exp{}, s);
        return map1<T>(a, out, n, Log{}, s);
      }
  }
  throw Error("launch_unary: unknown op");
}

}  // namespace

void launch_binary(BinaryOp op, DType dtype, const void* a, const void* b, void* out,
                   std::int64_t n, void* stream) {
  switch (dtype) {
    case DType::f32: return binary_t<float>(op, a, b, out, n, stream);
    case DType::f64: return binary_t<double>(op, a, b, out, n, stream);
    case DType::i32: return binary_t<std::int32_t>(op, a, b, out, n, stream);
  }
  throw DTypeError("launch_binary: unknown dtype");
}

void launch_scalar(BinaryOp op, bool reversed, DType dtype, const void* a, double s, void* out,
                   std::int64_t n, void* stream) {
  // The conversion happens here, on the host, exactly as the CPU path
  // converts its scalar (static_cast, i32 truncating toward zero).
  auto go = [&](auto tag) {
    using T = decltype(tag);
    const T st = static_cast<T>(s);
    if (reversed) scalar_t<true, T>(op, a, st, out, n, stream);
    else scalar_t<false, T>(op, a, st, out, n, stream);
  };
  switch (dtype) {
    case DType::f32: return go(float{});
    case DType::f64: return go(double{});
    case DType::i32: return go(std::int32_t{});
  }
  throw DTypeError("launch_scalar: unknown dtype");
}

void launch_unary(UnaryOp op, DType dtype, const void* a, void* out, std::int64_t n, void* stream) {
  switch (dtype) {
    case DType::f32: return unary_t<float>(op, a, out, n, stream);
    case DType::f64: return unary_t<double>(op, a, out, n, stream);
    case DType::i32: return unary_t<std::int32_t>(op, a, out, n, stream);
  }
  throw DTypeError("launch_unary: unknown dtype");
}

}  // namespace tide::cuda_kernels
