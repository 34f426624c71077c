// The CUDA elementwise table, generated from the op lists in kernels.h over
// the functors of elementwise_functors.h (the CPU's, compiled for the
// device). Kernels: grid-stride loops over 16-byte packs (four f32 or i32,
// two f64) when every pointer is 16-byte aligned, then a scalar tail; a
// scalar loop otherwise. Each launch is enqueued on the op's stream; n == 0
// launches nothing, and a failed launch throws CudaError. No __restrict__: in-place ops pass the same
// storage as input and output, and each element is read before it is written
// by the same thread.
#include <cstdint>

#include <tide/core/cuda_check.h>
#include <tide/core/error.h>

#include "../elementwise_table.h"
#include "grid_util.cuh"

namespace tide::kernels {

namespace {

using namespace cuda_kernels;  // grid_util.cuh

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

/// The launches behind the table (elementwise_table.h): the packed kernel
/// when every pointer is 16-byte aligned, the scalar one otherwise.
struct CudaMaps {
  template <typename T, typename F>
  static void map1(const void* a, void* out, std::int64_t n, F f, void* stream) {
    if (n == 0) return;
    const auto* ta = static_cast<const T*>(a);
    auto* to = static_cast<T*>(out);
    const bool vec = aligned16(a) && aligned16(out);
    if (vec) map1_kernel<T, true><<<grid_of<T>(n, true), kThreads, 0, as_stream(stream)>>>(ta, to, n, f);
    else map1_kernel<T, false><<<grid_of<T>(n, false), kThreads, 0, as_stream(stream)>>>(ta, to, n, f);
    TIDE_CUDA_LAUNCH_CHECK();
  }

  template <typename T, typename F>
  static void map2(const void* a, const void* b, void* out, std::int64_t n, F f, void* stream) {
    if (n == 0) return;
    const auto* ta = static_cast<const T*>(a);
    const auto* tb = static_cast<const T*>(b);
    auto* to = static_cast<T*>(out);
    const bool vec = aligned16(a) && aligned16(b) && aligned16(out);
    if (vec) map2_kernel<T, true><<<grid_of<T>(n, true), kThreads, 0, as_stream(stream)>>>(ta, tb, to, n, f);
    else map2_kernel<T, false><<<grid_of<T>(n, false), kThreads, 0, as_stream(stream)>>>(ta, tb, to, n, f);
    TIDE_CUDA_LAUNCH_CHECK();
  }
};

}  // namespace

const Elementwise cuda_elementwise = ElementwiseTable<CudaMaps>::make();

}  // namespace tide::kernels
