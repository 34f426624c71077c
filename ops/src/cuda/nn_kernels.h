// The nn and optimizer kernels on CUDA devices: plain C++ launchers,
// defined in nn.cu, that fill the CUDA nn and optim tables (tables.cc).
// Each takes the op's stream (a cudaStream_t of the current device) and
// device pointers, launches asynchronously, and throws tide::CudaError when
// a launch or call fails. They compute what the
// CPU kernels in ops/src/cpu/nn_kernels.h compute, with the differences
// noted here.
#pragma once

#include <cstdint>

#include <tide/core/dtype.h>

#include "../kernels.h"

namespace tide::cuda_kernels {

/// y[r, j] += b[j] for y [rows, cols], in dtype (f32 or f64): the bias of
/// linear, added to the gemm's rounded output as the CPU does.
void add_row_bias(void* stream, DType dtype, void* y, const void* b, std::int64_t rows,
                  std::int64_t cols);

/// out[j] = the sum over r of in[r, j]: one thread per column summing in
/// double in row order, so the result is the CPU's bit for bit.
void column_sums(void* stream, DType dtype, const void* in, void* out, std::int64_t rows,
                 std::int64_t cols);

/// dx = x > 0 ? dy : 0, any dtype.
void relu_backward(void* stream, DType dtype, const void* dy, const void* x, void* dx, std::int64_t n);

/// How many softmax cross-entropies computed their mean loss in the same
/// launch as the rows' (the last block's; a stream's worker launches them
/// so) in this process: how a test tells that path from the two launches.
std::uint64_t losses_in_one_launch();

/// *loss (0-d) = the mean of the rows' -log softmax(logits)[label], probs =
/// softmax per row; in double, rounded once. A row's max, sum of exponentials
/// and the mean over rows are reduced in parallel (a fixed order, not the
/// CPU's), and exp and log are CUDA's (within 1 ulp in double), so f64
/// results agree with the CPU to ~1e-15 relative and f32 ones to the
/// rounding of the final value. A label outside [0, classes) cannot be
/// thrown from the device: that row's loss is NaN, so *loss is NaN (probs
/// stay the softmax). Needs scratch of rows doubles: the block a stream's
/// worker keeps for it, else taken with cudaMallocAsync on the stream.
void softmax_cross_entropy(void* stream, DType dtype, const void* logits,
                           const std::int32_t* labels, void* loss, void* probs, std::int64_t rows,
                           std::int64_t classes);

/// dlogits = (probs - onehot(labels)) / rows, as the CPU computes it (bit for
/// bit). A row whose label is outside [0, classes) is all NaN.
void softmax_cross_entropy_backward(void* stream, DType dtype, const void* probs,
                                    const std::int32_t* labels, void* dlogits, std::int64_t rows,
                                    std::int64_t classes);

/// out[o, j] = the first k maximising in[o, k, j] (the first NaN, if any),
/// any dtype, indices in `index` (i32 or i64); one thread per output,
/// scanning k in order like the CPU.
void argmax(void* stream, DType dtype, const void* in, DType index, void* out, std::int64_t outer,
            std::int64_t len, std::int64_t inner);

}  // namespace tide::cuda_kernels
