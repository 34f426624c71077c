// where(cond, a, b): a select of two tensors by a third, broadcast together.
#include <tide/ops/elementwise.h>
#include <tide/ops/views.h>

#include <string>
#include <vector>

#include "autograd/node.h"
#include "autograd/record.h"
#include "autograd/shape_grad.h"
#include "broadcast_map.h"
#include "kernels.h"
#include "op_util.h"

namespace tide {

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Loc loc) {
  constexpr const char* name = "where";
  Engine& e = detail::engine_of(name, cond, "cond");
  detail::engine_of(name, a, "a");
  detail::engine_of(name, b, "b");
  detail::check_same_device(name, cond, a);
  detail::check_same_device(name, a, b);
  detail::check_same_dtype(name, a, b);
  const Shape shape = detail::broadcast_shapes(name, detail::broadcast_shapes(name, cond.shape(), a.shape()), b.shape());
  const Device dev = a.device();
  const auto fn = kernels::kernel_for(name, dev, kernels::elementwise(dev).where);
  // Operands that broadcast are expanded first (strided copies with zero
  // strides, in their own ops, whose gradient sums back onto the operand):
  // the select itself walks three tensors of one shape.
  const Tensor c = autograd::expand(cond, shape, loc), x = autograd::expand(a, shape, loc),
               y = autograd::expand(b, shape, loc);
  const DType dt = a.dtype(), ct = cond.dtype();
  const std::int64_t n = shape.numel();
  Tensor out = detail::push_new(
      e, name, shape, dt, dev, {c.storage(), x.storage(), y.storage()},
      [fn, dt, ct, n](const OpContext& ctx) {
        fn(dt, ct, ctx.in<void>(0), ctx.in<void>(1), ctx.in<void>(2), ctx.out<void>(0), n, ctx.native_stream);
      },
      loc, -1, true);
  if (autograd::wants(x, y)) [[unlikely]] {
    // The gradient goes where each input was taken, 0 elsewhere; expand's
    // own node sums it back over the axes an input stretched.
    const autograd::SavedTensor saved(c);
    autograd::record(name, loc, out, {&x, &y},
                     [saved](const Tensor& g, const autograd::Node& node, Loc l) {
                       const Tensor cv = saved.get(node);
                       const Tensor zero = zeros(g.shape(), {g.dtype(), g.device()}, l);
                       std::vector<Tensor> r(2);
                       if (node.needs_grad(0)) r[0] = where(cv, g, zero, l);
                       if (node.needs_grad(1)) r[1] = where(cv, zero, g, l);
                       return r;
                     },
                     {saved});
  }
  return out;
}

namespace {

/// The scalar forms' checks, before the scalar becomes a tensor (a fill op):
/// everything the tensor form would refuse is refused with nothing queued.
void check_with_scalar(const Tensor& cond, const Tensor& t, const char* role, double s) {
  detail::engine_of("where", cond, "cond");
  detail::engine_of("where", t, role);
  detail::check_same_device("where", cond, t);
  detail::check_scalar_fits("where", s, t.dtype());
  (void)detail::broadcast_shapes("where", cond.shape(), t.shape());
}

}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, double b, Loc loc) {
  check_with_scalar(cond, a, "a", b);
  return where(cond, a, full(Shape{}, b, {a.dtype(), a.device()}, loc), loc);
}

Tensor where(const Tensor& cond, double a, const Tensor& b, Loc loc) {
  check_with_scalar(cond, b, "b", a);
  return where(cond, full(Shape{}, a, {b.dtype(), b.device()}, loc), b, loc);
}

}  // namespace tide
