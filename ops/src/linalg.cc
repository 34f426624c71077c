// matmul: f32/f64 through CBLAS (row-major gemm, transposes passed through),
// i32 by a plain loop; both in ops/src/cpu/gemm.h.
#include <tide/ops/linalg.h>

#include <string>

#include "cpu/gemm.h"
#include "op_util.h"

namespace tide {

namespace {

using namespace detail;

/// "[2, 3]" or, transposed, "[2, 3]^T": how an operand appears in messages.
std::string operand(const Tensor& t, bool trans) { return t.shape().str() + (trans ? "^T" : ""); }

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, Loc loc) {
  const char* name = "matmul";
  Engine& e = engine_for(name, a, b);
  if (a.ndim() != 2 || b.ndim() != 2)
    throw ShapeError(op_prefix(name) + "needs two 2-D tensors, got shapes " + a.shape().str() +
                     " and " + b.shape().str());
  // op(a) is [m, k], op(b) is [kb, n].
  const std::int64_t m = a.shape()[trans_a ? 1 : 0], k = a.shape()[trans_a ? 0 : 1];
  const std::int64_t kb = b.shape()[trans_b ? 1 : 0], n = b.shape()[trans_b ? 0 : 1];
  if (k != kb)
    throw ShapeError(op_prefix(name) + "inner dimensions differ: " + operand(a, trans_a) + " x " +
                     operand(b, trans_b) + " (op(a)'s columns, " + std::to_string(k) +
                     ", must equal op(b)'s rows, " + std::to_string(kb) + ")");
  check_same_dtype(name, a, b);
  const cpu_kernels::GemmDims d = cpu_kernels::gemm_dims(name, m, n, k, trans_a, trans_b);
  return dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return push_new(
        e, name, Shape{m, n}, a.dtype(), a.device(), {a.storage(), b.storage()},
        [d](const OpContext& ctx) { cpu_kernels::gemm(ctx.in<T>(0), ctx.in<T>(1), ctx.out<T>(0), d); },
        loc);
  });
}

Tensor matmul(const Tensor& a, const Tensor& b, Loc loc) { return matmul(a, b, false, false, loc); }

}  // namespace tide
