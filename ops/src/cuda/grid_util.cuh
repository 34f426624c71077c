// Launch helpers shared by the .cu files of ops: grid sizes for grid-stride
// loops, the stream a closure hands over as void*, a floating dtype's
// dispatch, and 16-byte packs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include <cuda_runtime.h>

#include <tide/core/dtype.h>
#include <tide/core/error.h>

namespace tide::cuda_kernels {

inline constexpr int kThreads = 256;
/// The most blocks grid_for gives: one grid is at most kThreads * kMaxBlocks threads.
inline constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 16;

/// The largest count a grid-stride loop may index in 32 bits: its index
/// passes the count by up to one grid's threads before the loop ends, and
/// must not overflow meanwhile.
inline constexpr std::int64_t kMax32 = std::numeric_limits<std::int32_t>::max() - kThreads * kMaxBlocks;

/// Blocks for a grid-stride loop over `work` items. The cap keeps the grid
/// well inside gridDim.x's limit while still filling every SM many times
/// over; the loops do not depend on the grid size for their results.
inline unsigned grid_for(std::int64_t work) {
  const std::int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, kMaxBlocks));
}

/// The closure's stream. Null would mean the legacy default stream, which
/// orders against every other stream of the device and would serialize the
/// engine's streams: that is a backend bug, reported as an error.
inline cudaStream_t as_stream(void* s) {
  if (s == nullptr) throw Error("CUDA op run without a stream (OpContext::native_stream is null)");
  return static_cast<cudaStream_t>(s);
}

/// Calls f(T{}) with T the C++ type of a floating dtype (f64: double, else
/// float); the frontends of the ops that use it admit no other dtype.
template <typename F>
void dispatch_floating(DType t, F&& f) {
  if (t == DType::f64)
    f(double{});
  else
    f(float{});
}

/// This thread's first index and the stride of a grid-stride loop, both in
/// 64 bits so tensors past 2^31 elements index correctly.
__device__ inline std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_stride() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

/// 16 bytes of T, loaded or stored with one instruction (the pointer must
/// be 16-byte aligned).
template <typename T>
struct alignas(16) Pack16 {
  static constexpr int kWidth = 16 / static_cast<int>(sizeof(T));
  T v[kWidth];
};

/// Whether p may be read or written by Pack16s.
inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace tide::cuda_kernels
