// Matrix products.
#pragma once

#include <string_view>

#include <tide/ops/creation.h>
#include <tide/ops/matmul_precision.h>

namespace tide {

/// a [m, k] x b [k, n] -> [m, n]. f32 and f64 through OpenBLAS (cblas_?gemm)
/// on CPU devices and cuBLAS (cublasGemmEx) on CUDA devices; i32 by a plain
/// loop (a tiled kernel on CUDA), exact with wrap-around. Same dtype and
/// device for both.
Tensor matmul(const Tensor& a, const Tensor& b, Loc loc = Loc::current());

/// op(a) [m, k] x op(b) [k, n] -> [m, n], where op(x) is x transposed when
/// its flag is set (so a is stored [k, m] with trans_a, b [n, k] with
/// trans_b). The transpose is BLAS's (CblasTrans, CUBLAS_OP_T): nothing is
/// copied. Every dtype, like matmul(a, b); i32 also runs transposed forms.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b,
              Loc loc = Loc::current());

/// The MatmulPrecision setting (<tide/ops/matmul_precision.h>),
/// process-wide. Each op reads it when pushed (and keeps that value), so a
/// change affects only ops pushed afterwards. Any thread may call these.
void set_matmul_precision(MatmulPrecision p);
/// The current setting. Until set_matmul_precision is first called it is
/// TIDE_MATMUL_PRECISION (exact, tf32 or bf16; unset or empty means exact),
/// read on first use; a bad value throws tide::ValueError from here (and
/// so from the f32 products on CUDA devices, the only ops that read it)
/// until set_matmul_precision overrides it.
MatmulPrecision matmul_precision();

/// "exact", "tf32" or "bf16".
const char* matmul_precision_name(MatmulPrecision p);
/// The inverse of matmul_precision_name; throws tide::ValueError naming
/// the accepted values on any other text.
MatmulPrecision parse_matmul_precision(std::string_view text);

}  // namespace tide
