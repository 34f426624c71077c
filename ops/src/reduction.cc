// Reductions. A tensor reduced along `axis` is viewed as [outer, len, inner]
// (len = the axis extent); reducing every element is the case outer = inner
// = 1, len = numel, so one kernel per reduction serves both.
//
// Accumulation: f32 and f64 sum into a double, i32 into an int64, element by
// element in index order along the axis, and the total is converted to the
// tensor's dtype once at the end (i32 wraps around, as C++20 defines). The
// order is fixed, so results are bitwise reproducible run to run and equal to
// a plain sequential loop in double. mean divides that double total by len.
//
// The kernels are the device kind's reduction table (kernels.h): the CPU's
// in cpu/reduction.cc, the CUDA ones (cuda/reduction_kernels.h) with the
// same accumulator types and a fixed tree order instead of the sequential
// one (reproducible, but float sums may differ from the CPU's in the last
// bit).
#include <tide/ops/reduction.h>
#include <tide/ops/elementwise.h>

#include <string>

#include "autograd/record.h"
#include "kernels.h"
#include "op_util.h"

namespace tide {

namespace {

using namespace detail;
using kernels::ReduceOp;

struct Extents {
  std::int64_t outer = 1, len = 1, inner = 1;
};

Extents extents_all(const Shape& s) { return {1, s.numel(), 1}; }

Extents extents_along(const Shape& s, int axis) {
  Extents x;
  for (int d = 0; d < axis; ++d) x.outer *= s[d];
  x.len = s[axis];
  for (int d = axis + 1; d < s.ndim(); ++d) x.inner *= s[d];
  return x;
}

/// Checks done by the caller except the kind's own: those are here.
Tensor reduce(const char* name, ReduceOp op, Engine& e, const Tensor& a, const Shape& out_shape,
              Extents x, Loc loc) {
  if (op == ReduceOp::mean) check_floating(name, a.dtype());
  if ((op == ReduceOp::max || op == ReduceOp::min) && x.len == 0)
    throw ValueError(op_prefix(name) + "no elements to reduce in a tensor of shape " +
                     a.shape().str());
  const auto fn = kernels::kernel_for(name, a.device(), kernels::reduction(a.device()).reduce);
  const DType dt = a.dtype();
  return push_new(
      e, name, out_shape, dt, a.device(), {a.storage()},
      [fn, op, dt, x](const OpContext& ctx) {
        fn(op, dt, ctx.in<void>(0), ctx.out<void>(0), x.outer, x.len, x.inner, ctx.native_stream);
      },
      loc, -1, true);
}

/// min's gradient is max's rule (shared among the elements equal to the
/// result, NaN where it is NaN), which reads only the result.
autograd::Reduce grad_kind(ReduceOp op) {
  return op == ReduceOp::sum ? autograd::Reduce::sum : op == ReduceOp::mean ? autograd::Reduce::mean
                                                                             : autograd::Reduce::max;
}

/// A bool tensor is summed as i64 (the count of true values, as torch
/// does); the other reductions refuse it.
Tensor counted(const char* name, ReduceOp op, const Tensor& a, Loc loc) {
  if (op != ReduceOp::sum)
    throw DTypeError(op_prefix(name) + "takes numbers, not a bool tensor (sum counts its true values; or "
                     "convert it first, to_dtype)");
  return to_dtype(a, DType::i64, loc);
}

Tensor reduce_all(const char* name, ReduceOp op, const Tensor& a, Loc loc) {
  Engine& e = engine_for(name, a);
  if (a.dtype() == DType::b8) [[unlikely]] return reduce_all(name, op, counted(name, op, a, loc), loc);
  Tensor out = reduce(name, op, e, a, Shape{}, extents_all(a.shape()), loc);
  if (autograd::wants(a)) autograd::record_reduce(grad_kind(op), out, a, std::nullopt, loc);
  return out;
}

Tensor reduce_along(const char* name, ReduceOp op, const Tensor& a, int axis, Loc loc) {
  Engine& e = engine_for(name, a);
  if (a.dtype() == DType::b8) [[unlikely]] {
    normalize_axis(name, a, axis);
    return reduce_along(name, op, counted(name, op, a, loc), axis, loc);
  }
  const int ax = normalize_axis(name, a, axis);
  Tensor out = reduce(name, op, e, a, a.shape().without(ax), extents_along(a.shape(), ax), loc);
  if (autograd::wants(a)) autograd::record_reduce(grad_kind(op), out, a, ax, loc);
  return out;
}

}  // namespace

Tensor sum(const Tensor& a, Loc loc) { return reduce_all("sum", ReduceOp::sum, a, loc); }

// any and all count the true values: as bool, then summed (i64) and
// compared, three ops.
namespace {
Tensor as_bool(const char* name, const Tensor& a, Loc loc) {
  engine_for(name, a);
  return a.dtype() == DType::b8 ? a : to_dtype(a, DType::b8, loc);
}
}  // namespace

Tensor any(const Tensor& a, Loc loc) { return gt(sum(as_bool("any", a, loc), loc), 0.0, loc); }
Tensor any(const Tensor& a, int axis, Loc loc) {
  normalize_axis("any", a, axis);
  return gt(sum(as_bool("any", a, loc), axis, loc), 0.0, loc);
}
Tensor all(const Tensor& a, Loc loc) {
  return eq(sum(as_bool("all", a, loc), loc), static_cast<double>(a.numel()), loc);
}
Tensor all(const Tensor& a, int axis, Loc loc) {
  const int ax = normalize_axis("all", a, axis);
  return eq(sum(as_bool("all", a, loc), axis, loc), static_cast<double>(a.shape()[ax]), loc);
}
Tensor sum(const Tensor& a, int axis, Loc loc) { return reduce_along("sum", ReduceOp::sum, a, axis, loc); }
Tensor mean(const Tensor& a, Loc loc) { return reduce_all("mean", ReduceOp::mean, a, loc); }
Tensor mean(const Tensor& a, int axis, Loc loc) { return reduce_along("mean", ReduceOp::mean, a, axis, loc); }
Tensor max(const Tensor& a, Loc loc) { return reduce_all("max", ReduceOp::max, a, loc); }
Tensor max(const Tensor& a, int axis, Loc loc) { return reduce_along("max", ReduceOp::max, a, axis, loc); }
Tensor min(const Tensor& a, Loc loc) { return reduce_all("min", ReduceOp::min, a, loc); }
Tensor min(const Tensor& a, int axis, Loc loc) { return reduce_along("min", ReduceOp::min, a, axis, loc); }

}  // namespace tide
