// How a reduction's partial results combine (internal to ops/src/cuda/): a
// block's values in a fixed tree of warp shuffles, and an output's chunk
// partials, loaded from L2, in chunk order by one thread or by a whole
// block. The reduction kernels' two passes, and their one-launch forms,
// share these, so that both add in the same order.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "grid_util.cuh"

namespace tide::cuda_kernels {

inline constexpr unsigned kWarp = 32;

/// The block's values combined in a fixed tree: within each warp by
/// shuffles, then the warps' results by the first warp. The result is
/// thread 0's. `warps` holds kThreads / kWarp values; the caller syncs
/// before writing it again.
template <typename Op, typename Acc>
__device__ Acc block_combine(Acc acc, Acc* warps) {
  for (unsigned off = kWarp / 2; off > 0; off /= 2) acc = Op::combine(acc, __shfl_down_sync(0xffffffffu, acc, off));
  const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  if (lane == 0) warps[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = lane < kThreads / kWarp ? warps[lane] : Op::identity();
    for (unsigned off = kWarp / 2; off > 0; off /= 2)
      acc = Op::combine(acc, __shfl_down_sync(0xffffffffu, acc, off));
  }
  return acc;
}

/// A partial another block may have written in this kernel: loaded from L2
/// (ld.global.cg), never from a line of this SM's L1 that another row's
/// partials share. The pass-2 kernels that share its loops read so too.
template <typename Acc>
__device__ __forceinline__ Acc load_partial(const Acc* p) {
  static_assert(sizeof(Acc) == 4 || sizeof(Acc) == 8, "partials are 4 or 8 bytes");
  using Bits = std::conditional_t<sizeof(Acc) == 8, unsigned long long, unsigned>;
  const Bits b = __ldcg(reinterpret_cast<const Bits*>(p));
  Acc a;
  memcpy(&a, &b, sizeof a);
  return a;
}

/// An output's `chunks` partials, `stride` apart, combined by one thread in
/// chunk order from the identity; eight are loaded before any is added.
template <typename Op>
__device__ typename Op::Acc combine_in_order(const typename Op::Acc* q, std::int64_t chunks, std::int64_t stride) {
  using Acc = typename Op::Acc;
  Acc acc = Op::identity();
  std::int64_t c = 0;
  for (; c + 8 <= chunks; c += 8) {
    Acc x[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) x[u] = load_partial(q + (c + u) * stride);
#pragma unroll
    for (int u = 0; u < 8; ++u) acc = Op::combine(acc, x[u]);
  }
  for (; c < chunks; ++c) acc = Op::combine(acc, load_partial(q + c * stride));
  return acc;
}

/// An output's `chunks` side-by-side partials combined by the whole block:
/// its threads stride over them, four loaded before any is added, then
/// block_combine's tree. The result is thread 0's; every thread must call
/// this, and sync before `warps` is written again.
template <typename Op>
__device__ typename Op::Acc combine_by_block(const typename Op::Acc* p, std::int64_t chunks, typename Op::Acc* warps) {
  using Acc = typename Op::Acc;
  Acc acc = Op::identity();
  std::int64_t c = threadIdx.x;
  for (; c + 3 * kThreads < chunks; c += 4 * kThreads) {
    Acc v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = load_partial(p + c + u * kThreads);
#pragma unroll
    for (int u = 0; u < 4; ++u) acc = Op::combine(acc, v[u]);
  }
  for (; c < chunks; c += kThreads) acc = Op::combine(acc, load_partial(p + c));
  return block_combine<Op>(acc, warps);
}

}  // namespace tide::cuda_kernels
