// out[i] = f(in[i]...) over contiguous arrays on a CUDA stream: tiles of
// 16-byte packs (four f32 or i32, two f64 or i64), four packs per thread
// loaded before any is computed, when every pointer is 16-byte aligned and
// every input has the output's type, then a scalar tail; a scalar
// grid-stride loop otherwise. And a row or a column broadcast over a matrix
// by the same packs. Shared by the elementwise table and the nn kernels
// that are elementwise (relu's backward, linear's bias add). No __restrict__: in-place
// ops pass the same storage as input and output, and each element is read
// before it is written by the same thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <tide/core/cuda_check.h>

#include "../kernels.h"
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

/// A broadcast over a matrix [rows, cols] with cols a whole number of
/// packs: one operand walks all of it (`full`), the other (`part`) a row of
/// cols (Column false: part[c]) or a column of rows (Column true:
/// part[r]). out = f(full, part), or f(part, full) when PartFirst (a is the
/// broadcast one). By 16-byte packs, in tiles as map_packs_kernel's: a
/// pack lies in one row, so its part is one pack of the row, or one element
/// of the column for all its lanes. In place (out == full) is safe: each
/// thread reads its packs before it writes them.
template <typename T, typename F, bool Column, bool PartFirst, typename Index>
__global__ void broadcast_packs_kernel(const T* full, const T* part, T* out, Index packs, Index row_packs, F f) {
  using P = Pack<T>;
  const P* fp = reinterpret_cast<const P*>(full);
  P* op = reinterpret_cast<P*>(out);
  constexpr Index kTile = static_cast<Index>(kTilePacks);
  for (Index base = static_cast<Index>(blockIdx.x) * kTile; base < packs;
       base += static_cast<Index>(gridDim.x) * kTile) {
    const Index at = base + static_cast<Index>(threadIdx.x);
    P v[kUnroll], q[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const Index i = at + k * kThreads;
      if (i >= packs) continue;
      v[k] = fp[i];
      if constexpr (Column) {
        const T c = part[i / row_packs];
#pragma unroll
        for (int l = 0; l < P::kWidth; ++l) q[k].v[l] = c;
      } else {
        q[k] = reinterpret_cast<const P*>(part)[i % row_packs];
      }
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const Index i = at + k * kThreads;
      if (i >= packs) continue;
      P r;
#pragma unroll
      for (int l = 0; l < P::kWidth; ++l) r.v[l] = PartFirst ? f(q[k].v[l], v[k].v[l]) : f(v[k].v[l], q[k].v[l]);
      op[i] = r;
    }
  }
}

/// Launches broadcast_packs_kernel when `m` is such a matrix broadcast (two
/// axes once merged, one operand walking both and the other one of them),
/// cols is a whole number of packs and the pointers are 16-byte aligned.
/// Returns whether it did.
template <typename T, typename F>
bool launch_broadcast_packs(const T* a, const T* b, T* out, const kernels::BroadcastMap& m, F f, void* stream) {
  constexpr std::int64_t kWidth = Pack<T>::kWidth;
  if (m.ndim != 2 || m.extent[1] % kWidth != 0) return false;
  const bool a_full = m.a_walks == 0b11, b_full = m.b_walks == 0b11;
  if (a_full == b_full) return false;  // both walk all (not a broadcast here) or neither
  const std::uint8_t part_walks = a_full ? m.b_walks : m.a_walks;
  if (part_walks != 0b01 && part_walks != 0b10) return false;
  const bool column = part_walks == 0b01;
  const T* full = a_full ? a : b;
  const T* part = a_full ? b : a;
  if (!aligned16(out) || !aligned16(full) || (!column && !aligned16(part))) return false;
  const std::int64_t packs = m.numel() / kWidth, row_packs = m.extent[1] / kWidth;
  const std::int64_t tiles = (packs + kTilePacks - 1) / kTilePacks;
  const auto blocks = static_cast<unsigned>(std::clamp<std::int64_t>(tiles, 1, kMaxBlocks));
  const cudaStream_t s = as_stream(stream);
  // A 32-bit index may run past `packs` by a whole grid's tiles.
  const bool narrow = packs <= std::numeric_limits<std::int32_t>::max() - kMaxBlocks * kTilePacks;
  auto launch = [&](auto column_tag, auto part_first_tag) {
    constexpr bool kColumn = decltype(column_tag)::value, kPartFirst = decltype(part_first_tag)::value;
    if (narrow)
      broadcast_packs_kernel<T, F, kColumn, kPartFirst, std::int32_t><<<blocks, kThreads, 0, s>>>(
          full, part, out, static_cast<std::int32_t>(packs), static_cast<std::int32_t>(row_packs), f);
    else
      broadcast_packs_kernel<T, F, kColumn, kPartFirst, std::int64_t><<<blocks, kThreads, 0, s>>>(
          full, part, out, packs, row_packs, f);
  };
  using Yes = std::true_type;
  using No = std::false_type;
  if (column) {
    if (a_full) launch(Yes{}, No{});
    else launch(Yes{}, Yes{});
  } else {
    if (a_full) launch(No{}, No{});
    else launch(No{}, Yes{});
  }
  TIDE_CUDA_LAUNCH_CHECK();
  return true;
}

}  // namespace tide::cuda_kernels
