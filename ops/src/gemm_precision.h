// The precision a product pushed now runs at, shared by matmul (linalg.cc)
// and the linear layer's gemms (nn.cc).
#pragma once

#include <tide/core/dtype.h>
#include <tide/ops/linalg.h>

namespace tide::detail {

/// Read at push time: f32 products follow the matmul precision setting,
/// f64 and i32 ones are exact.
inline MatmulPrecision gemm_precision(DType dtype) {
  return dtype == DType::f32 ? matmul_precision() : MatmulPrecision::exact;
}

}  // namespace tide::detail
