// CUDA elementwise kernels behind plain C++ launchers, so the ops' .cc files
// (built by g++) can call them without CUDA headers. Every launcher enqueues
// its work on `stream` (a cudaStream_t) and returns at once; pointers are
// device pointers to n contiguous elements of `dtype`; n == 0 launches
// nothing. Errors of the launch throw tide::CudaError.
//
// The semantics are the CPU kernels' (ops/src/cpu/elementwise_kernels.h):
// i32 arithmetic wraps around, floating results are IEEE (one correctly
// rounded operation, exp/log within CUDA's documented ulps). Where the CPU
// throws from inside the kernel a GPU kernel cannot: an i32 division by a
// zero element gives 0, and INT32_MIN / -1 wraps to INT32_MIN.
#pragma once

#include <cstdint>

#include <tide/core/dtype.h>

namespace tide::cuda_kernels {

enum class BinaryOp { add, sub, mul, div, eq };
enum class UnaryOp { neg, exp, log, relu };

/// out[i] = a[i] op b[i]. `out` may alias `a` or `b` (in-place ops).
void launch_binary(BinaryOp op, DType dtype, const void* a, const void* b, void* out,
                   std::int64_t n, void* stream);

/// out[i] = a[i] op s, or s op a[i] when `reversed`; s is converted to
/// `dtype` first, as the CPU path does. `out` may alias `a`.
void launch_scalar(BinaryOp op, bool reversed, DType dtype, const void* a, double s, void* out,
                   std::int64_t n, void* stream);

/// out[i] = op(a[i]). exp and log take floating dtypes only.
void launch_unary(UnaryOp op, DType dtype, const void* a, void* out, std::int64_t n, void* stream);

}  // namespace tide::cuda_kernels
