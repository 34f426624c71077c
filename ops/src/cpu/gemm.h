// CPU matrix products, row-major: c[m, n] = op(a)[m, k] op(b)[k, n], where
// op(x) is x or its transpose. f32 and f64 go to CBLAS (cblas_?gemm); i32
// and i64 run a plain loop that wraps around on overflow like the other
// integer ops.
// Shared by matmul (linalg.cc) and the linear layer (nn.cc).
#pragma once

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../gemm_dims.h"
#include "../elementwise_functors.h"

namespace tide::cpu_kernels {

using detail::GemmDims;
using detail::gemm_dims;
using functors::bits;
using functors::wrap;

/// The integer product (i32, i64): a plain loop in unsigned arithmetic,
/// wrapping around.
template <typename T>
void gemm_int(const T* a, const T* b, T* c, GemmDims d, bool accumulate) {
  using U = std::make_unsigned_t<T>;
  const std::size_t row_bytes = static_cast<std::size_t>(d.n) * sizeof(T);
  for (std::int64_t i = 0; i < d.m; ++i) {
    T* crow = c + i * d.n;
    if (row_bytes && !accumulate) std::memset(crow, 0, row_bytes);
    // i-k-j order: without trans_b the inner loop runs along contiguous rows
    // of b and c.
    for (std::int64_t p = 0; p < d.k; ++p) {
      const U aip = bits(d.trans_a ? a[p * d.m + i] : a[i * d.k + p]);
      if (d.trans_b) {
        for (std::int64_t j = 0; j < d.n; ++j) crow[j] = wrap<T>(bits(crow[j]) + aip * bits(b[j * d.k + p]));
      } else {
        const T* brow = b + p * d.n;
        for (std::int64_t j = 0; j < d.n; ++j) crow[j] = wrap<T>(bits(crow[j]) + aip * bits(brow[j]));
      }
    }
  }
}

/// c = op(a) op(b), or c += op(a) op(b) when `accumulate`; c must not
/// overlap a or b.
template <typename T>
void gemm(const T* a, const T* b, T* c, GemmDims d, bool accumulate = false) {
  if (d.m == 0 || d.n == 0) return;
  if constexpr (std::is_integral_v<T>) {
    gemm_int(a, b, c, d, accumulate);
  } else if (d.k == 0) {
    // An empty sum; BLAS would also refuse a leading dimension of 0.
    if (!accumulate) std::fill(c, c + static_cast<std::int64_t>(d.m) * d.n, T(0));
  } else {
    const CBLAS_TRANSPOSE ta = d.trans_a ? CblasTrans : CblasNoTrans;
    const CBLAS_TRANSPOSE tb = d.trans_b ? CblasTrans : CblasNoTrans;
    // Leading dimensions are the stored row lengths.
    const int lda = d.trans_a ? d.m : d.k;
    const int ldb = d.trans_b ? d.k : d.n;
    const T beta = accumulate ? T(1) : T(0);
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, ta, tb, d.m, d.n, d.k, 1.0f, a, lda, b, ldb, beta, c, d.n);
    else
      cblas_dgemm(CblasRowMajor, ta, tb, d.m, d.n, d.k, 1.0, a, lda, b, ldb, beta, c, d.n);
  }
}

}  // namespace tide::cpu_kernels
