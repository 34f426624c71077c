// The precision of f32 matrix products on CUDA devices: its own header so
// that the CUDA sources can name it without the tensor headers. The setting
// itself (set_matmul_precision) is declared in <tide/ops/linalg.h>.
#pragma once

namespace tide {

/// How f32 matrix products on CUDA devices may trade precision for speed:
/// matmul and the gemms of the linear layer (linear, linear_backward_weight,
/// linear_backward_input) on f32 tensors. f64 and i32 products, and every
/// product on a CPU device, ignore it: the CPU always computes in full f32.
enum class MatmulPrecision {
  /// Full f32 arithmetic (cuBLAS's CUBLAS_COMPUTE_32F, never TF32): the
  /// default.
  exact,
  /// Inputs rounded to TF32 (10-bit mantissa) on tensor cores, accumulated
  /// in f32 (CUBLAS_COMPUTE_32F_FAST_TF32): relative errors ~1e-3.
  tf32,
  /// Inputs rounded to bf16 (7-bit mantissa), accumulated in f32
  /// (CUBLAS_COMPUTE_32F_FAST_16BF): relative errors ~1e-2.
  bf16,
};

}  // namespace tide
