// out[i] = f(in[i]...) over contiguous arrays on a CUDA stream: tiles of
// 16-byte packs (four f32 or i32, two f64 or i64), four packs per thread
// loaded before any is computed, when every pointer is 16-byte aligned and
// every input has the output's type, then a scalar tail; a scalar
// grid-stride loop otherwise. Shared by the elementwise table and the nn
// kernels that are elementwise (relu's backward). No __restrict__: in-place
// ops pass the same storage as input and output, and each element is read
// before it is written by the same thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <tide/core/cuda_check.h>

#include "grid_util.cuh"

namespace tide::cuda_kernels {

template <typename T>
using Pack = Pack16<T>;  // grid_util.cuh

/// f over the lanes of one pack of each input (each taken by value: one
/// 16-byte load per input).
template <typename T, typename F, typename... Packs>
__device__ __forceinline__ Pack<T> map_pack(F f, Packs... x) {
  Pack<T> r;
#pragma unroll
  for (int k = 0; k < Pack<T>::kWidth; ++k) r.v[k] = f(x.v[k]...);
  return r;
}

/// out[i] = f(in[i]...) element by element, in a grid-stride loop: the
/// path for pointers that are not 16-byte aligned, and for conversions.
template <typename T, typename F, typename... In>
__global__ void map_kernel(T* out, std::int64_t n, F f, const In*... in) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) out[i] = f(in[i]...);
}

// Packs per thread per tile of the packed kernel. Each thread issues all
// its loads (kUnroll per input, 16 bytes each) before it computes or stores
// anything, so that a thread keeps kUnroll x inputs x 16 bytes in flight
// rather than one load per input; a block's tile is kThreads x kUnroll
// packs, the k-th pack of every thread side by side, so each load
// instruction of a warp reads 512 consecutive bytes.
constexpr int kUnroll = 4;
constexpr std::int64_t kTilePacks = std::int64_t{kThreads} * kUnroll;

/// out = f(in...) by 16-byte packs, every pointer 16-byte aligned and every
/// input of type T: tiles of kTilePacks packs, a grid-stride loop over
/// them, the last tile checked pack by pack; then the elements past the
/// last whole pack. In place (out == in) is safe: each thread reads its
/// packs before it writes the same packs, and no other thread touches them.
template <typename T, typename F, typename... In>
__global__ void map_packs_kernel(T* out, std::int64_t n, F f, const In*... in) {
  static_assert((std::is_same_v<T, In> && ...), "the packed path has one type in and out");
  using P = Pack<T>;
  constexpr int kIn = sizeof...(In);
  const P* src[kIn] = {reinterpret_cast<const P*>(in)...};
  P* dst = reinterpret_cast<P*>(out);
  const std::int64_t packs = n / P::kWidth;
  for (std::int64_t base = std::int64_t{blockIdx.x} * kTilePacks; base < packs;
       base += std::int64_t{gridDim.x} * kTilePacks) {
    const std::int64_t at = base + threadIdx.x;
    P v[kIn][kUnroll];
    if (base + kTilePacks <= packs) {  // a whole tile: no checks
#pragma unroll
      for (int j = 0; j < kIn; ++j)
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) v[j][k] = src[j][at + k * kThreads];
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        if constexpr (kIn == 1) dst[at + k * kThreads] = map_pack<T>(f, v[0][k]);
        else dst[at + k * kThreads] = map_pack<T>(f, v[0][k], v[1][k]);
      }
    } else {  // the last, partial tile
#pragma unroll
      for (int j = 0; j < kIn; ++j)
#pragma unroll
        for (int k = 0; k < kUnroll; ++k)
          if (at + k * kThreads < packs) v[j][k] = src[j][at + k * kThreads];
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        if (at + k * kThreads >= packs) continue;
        if constexpr (kIn == 1) dst[at + k * kThreads] = map_pack<T>(f, v[0][k]);
        else dst[at + k * kThreads] = map_pack<T>(f, v[0][k], v[1][k]);
      }
    }
  }
  // Fewer than P::kWidth elements are left after the last whole pack.
  if (blockIdx.x == 0)
    for (std::int64_t i = packs * P::kWidth + threadIdx.x; i < n; i += blockDim.x) out[i] = f(in[i]...);
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

/// Launches map_packs_kernel over `in` when every pointer is 16-byte
/// aligned and every input is of the output's type (a block per tile,
/// capped), map_kernel otherwise (a comparison's bool output among them).
template <typename T, typename F, typename... In>
void launch_map(void* out, std::int64_t n, F f, void* stream, const In*... in) {
  if (n == 0) return;
  auto* to = static_cast<T*>(out);
  bool vec = false;
  if constexpr ((std::is_same_v<T, In> && ...)) vec = (aligned16(out) && ... && aligned16(in));
  if (vec) {
    if constexpr ((std::is_same_v<T, In> && ...)) {
      const std::int64_t tiles = (n / Pack<T>::kWidth + kTilePacks - 1) / kTilePacks;
      const auto blocks = static_cast<unsigned>(std::clamp<std::int64_t>(tiles, 1, kMaxBlocks));
      map_packs_kernel<T><<<blocks, kThreads, 0, as_stream(stream)>>>(to, n, f, in...);
    }
  } else {
    map_kernel<T><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(to, n, f, in...);
  }
  TIDE_CUDA_LAUNCH_CHECK();
}

}  // namespace tide::cuda_kernels
