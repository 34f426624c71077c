// Scratch memory of a kernel (internal to ops/src/cuda/): stream-ordered
// from the device's default pool, which tide's storage cache can make room in.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include <tide/core/cuda_check.h>
#include <tide/core/device.h>

namespace tide::cuda_kernels {

/// cudaMallocAsync of a kernel's scratch memory on `stream`. When the
/// device is out of memory, the blocks tide caches for its storages go back
/// to the driver (empty_cuda_cache) and the allocation is tried once more;
/// throws tide::CudaError when it still fails.
inline void* scratch_alloc(std::size_t bytes, cudaStream_t stream) {
  void* p = nullptr;
  cudaError_t e = cudaMallocAsync(&p, bytes, stream);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky
    int device = 0;
    TIDE_CUDA_CHECK(cudaGetDevice(&device));
    empty_cuda_cache(device);
    e = cudaMallocAsync(&p, bytes, stream);
  }
  TIDE_CUDA_CHECK(e);
  return p;
}

}  // namespace tide::cuda_kernels
