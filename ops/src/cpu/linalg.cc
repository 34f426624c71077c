// The CPU matrix-product table: CBLAS for f32 and f64, a wrapping loop for
// i32 (cpu/gemm.h). The precision setting is for CUDA devices only.
#include "../kernels.h"
#include "gemm.h"

namespace tide::kernels {

namespace {

void gemm(void*, DType dtype, MatmulPrecision, const void* a, const void* b, void* c,
          const detail::GemmDims& d) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    cpu_kernels::gemm(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c), d);
  });
}

}  // namespace

const Linalg cpu_linalg{&gemm};

}  // namespace tide::kernels
