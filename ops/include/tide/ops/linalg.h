// Matrix products.
#pragma once

#include <tide/ops/creation.h>

namespace tide {

/// a [m, k] x b [k, n] -> [m, n]. f32 and f64 through OpenBLAS (cblas_?gemm);
/// i32 by a plain loop. Same dtype and device for both.
Tensor matmul(const Tensor& a, const Tensor& b, Loc loc = Loc::current());

}  // namespace tide
