// matmul: f32/f64 through CBLAS (row-major gemm), i32 by a plain loop.
#include <tide/ops/linalg.h>

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "cpu/elementwise_kernels.h"
#include "op_util.h"

namespace tide {

namespace {

using namespace detail;

struct GemmDims {
  int m = 0, n = 0, k = 0;
};

/// out[m, n] = a[m, k] * b[k, n], wrapping on overflow like the other i32 ops.
void matmul_i32(const std::int32_t* a, const std::int32_t* b, std::int32_t* out, GemmDims d) {
  const std::size_t row_bytes = static_cast<std::size_t>(d.n) * sizeof(std::int32_t);
  for (std::int64_t i = 0; i < d.m; ++i) {
    std::int32_t* c = out + i * d.n;
    if (row_bytes) std::memset(c, 0, row_bytes);
    // i-k-j order: the inner loop runs along contiguous rows of b and c.
    for (std::int64_t p = 0; p < d.k; ++p) {
      const std::uint32_t aip = cpu_kernels::bits(a[i * d.k + p]);
      const std::int32_t* brow = b + p * d.n;
      for (std::int64_t j = 0; j < d.n; ++j) c[j] = cpu_kernels::wrap(cpu_kernels::bits(c[j]) + aip * cpu_kernels::bits(brow[j]));
    }
  }
}

template <typename T>
void matmul_kernel(const T* a, const T* b, T* out, GemmDims d) {
  if (d.m == 0 || d.n == 0) return;
  if constexpr (std::is_same_v<T, std::int32_t>) {
    matmul_i32(a, b, out, d);
  } else if (d.k == 0) {
    // An empty sum; BLAS would also refuse lda = 0.
    std::fill(out, out + static_cast<std::int64_t>(d.m) * d.n, T(0));
  } else if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d.m, d.n, d.k, 1.0f, a, d.k, b, d.n,
                0.0f, out, d.n);
  } else {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d.m, d.n, d.k, 1.0, a, d.k, b, d.n, 0.0,
                out, d.n);
  }
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, Loc loc) {
  const char* name = "matmul";
  Engine& e = engine_for(name, a, b);
  if (a.ndim() != 2 || b.ndim() != 2)
    throw ShapeError(op_prefix(name) + "needs two 2-D tensors, got shapes " + a.shape().str() +
                     " and " + b.shape().str());
  if (a.shape()[1] != b.shape()[0])
    throw ShapeError(op_prefix(name) + "inner dimensions differ: " + a.shape().str() + " x " +
                     b.shape().str() + " (a's columns must equal b's rows)");
  check_same_dtype(name, a, b);
  // BLAS takes int dimensions.
  constexpr std::int64_t kMaxDim = std::numeric_limits<int>::max();
  for (std::int64_t dim : {a.shape()[0], a.shape()[1], b.shape()[1]})
    if (dim > kMaxDim)
      throw ShapeError(op_prefix(name) + "dimension " + std::to_string(dim) + " is larger than " +
                       std::to_string(kMaxDim) + ", the most BLAS takes");
  const GemmDims d{static_cast<int>(a.shape()[0]), static_cast<int>(b.shape()[1]),
                   static_cast<int>(a.shape()[1])};
  return dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return push_new(
        e, name, Shape{a.shape()[0], b.shape()[1]}, a.dtype(), a.device(),
        {a.storage(), b.storage()},
        [d](const OpContext& ctx) { matmul_kernel(ctx.in<T>(0), ctx.in<T>(1), ctx.out<T>(0), d); },
        loc);
  });
}

}  // namespace tide
