// Matrix products on CUDA devices: the CUDA linalg table's gemm, also the
// first half of its linear (tables.cc). Plain C++ (no CUDA headers),
// so g++ can compile its callers; defined in blas.cu.
#pragma once

#include <tide/core/dtype.h>
#include <tide/ops/matmul_precision.h>

#include "../gemm_dims.h"

namespace tide::cuda_kernels {

/// c[m, n] = op(a) op(b), row-major, on `stream` (a cudaStream_t) of the
/// current device: f32 and f64 through
/// cublasGemmEx with the stream's own handle, i32 by a tiled kernel with
/// wrap-around. `precision` matters for f32 only. Asynchronous; throws
/// tide::CudaError when a call or launch fails.
void gemm(void* stream, DType dtype, MatmulPrecision precision, const void* a,
          const void* b, void* c, const detail::GemmDims& d);

}  // namespace tide::cuda_kernels
