// Matrix products.
#pragma once

#include <tide/ops/creation.h>

namespace tide {

/// a [m, k] x b [k, n] -> [m, n]. f32 and f64 through OpenBLAS (cblas_?gemm);
/// i32 by a plain loop. Same dtype and device for both.
Tensor matmul(const Tensor& a, const Tensor& b, Loc loc = Loc::current());

/// op(a) [m, k] x op(b) [k, n] -> [m, n], where op(x) is x transposed when
/// its flag is set (so a is stored [k, m] with trans_a, b [n, k] with
/// trans_b). The transpose is BLAS's (CblasTrans): nothing is copied. Every
/// dtype, like matmul(a, b); i32 also runs transposed forms by a plain loop.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b,
              Loc loc = Loc::current());

}  // namespace tide
