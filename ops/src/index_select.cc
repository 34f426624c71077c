// index_select and index_add: a gather and a scatter-add of whole slices
// along one axis, by an index tensor. Each is one op; each is the other's
// gradient.
#include <tide/ops/creation.h>
#include <tide/ops/elementwise.h>
#include <tide/ops/views.h>

#include <string>
#include <vector>

#include "autograd/node.h"
#include "autograd/record.h"
#include "kernels.h"
#include "op_util.h"

namespace tide {

namespace {

/// a viewed as [outer, len, inner] around `axis`.
struct AxisDims {
  std::int64_t outer = 1, len = 1, inner = 1;
};

AxisDims dims_around(const Shape& s, int axis) {
  AxisDims d;
  d.len = s[axis];
  for (int i = 0; i < axis; ++i) d.outer *= s[i];
  for (int i = axis + 1; i < s.ndim(); ++i) d.inner *= s[i];
  return d;
}

/// The checks both ops make on the index; returns the normalized axis.
int check_index(const char* name, const Tensor& a, int axis, const Tensor& index) {
  detail::engine_of(name, index, "index");
  detail::check_same_device(name, a, index);
  if (index.dtype() != DType::i32 && index.dtype() != DType::i64)
    throw DTypeError(detail::op_prefix(name) + "index is " + dtype_name(index.dtype()) + ": it must be i32 or i64");
  if (index.ndim() > 1)
    throw ShapeError(detail::op_prefix(name) + "index has shape " + index.shape().str() +
                     ": it must have 0 or 1 axes");
  return detail::normalize_axis(name, a, axis);
}

Shape with_extent(const Shape& s, int axis, std::int64_t extent) {
  std::vector<std::int64_t> dims(s.begin(), s.end());
  dims[static_cast<std::size_t>(axis)] = extent;
  return Shape(dims.begin(), dims.end());
}

}  // namespace

Tensor index_select(const Tensor& a, int axis, const Tensor& index, Loc loc) {
  constexpr const char* name = "index_select";
  Engine& e = detail::engine_of(name, a, "a");
  const int ax = check_index(name, a, axis, index);
  const Device dev = a.device();
  const auto fn = kernels::kernel_for(name, dev, kernels::elementwise(dev).index_select);
  const AxisDims d = dims_around(a.shape(), ax);
  const std::int64_t count = index.numel();
  const DType dt = a.dtype(), it = index.dtype();
  Tensor out = detail::push_new(
      e, name, with_extent(a.shape(), ax, count), dt, dev, {a.storage(), index.storage()},
      [fn, dt, it, d, count](const OpContext& ctx) {
        fn(dt, it, ctx.in<void>(0), ctx.in<void>(1), ctx.out<void>(0), d.outer, d.len, count, d.inner,
           ctx.native_stream);
      },
      loc, -1, true);
  if (autograd::wants(a)) [[unlikely]] {
    const autograd::SavedTensor saved(index);
    const Shape shape = a.shape();
    autograd::record(name, loc, out, {&a},
                     [saved, shape, ax](const Tensor& g, const autograd::Node& node, Loc l) {
                       return std::vector<Tensor>{
                           index_add(zeros(shape, {g.dtype(), g.device()}, l), ax, saved.get(node), g, l)};
                     },
                     {saved});
  }
  return out;
}

Tensor index_add(const Tensor& a, int axis, const Tensor& index, const Tensor& src, Loc loc) {
  constexpr const char* name = "index_add";
  Engine& e = detail::engine_of(name, a, "a");
  detail::engine_of(name, src, "src");
  const int ax = check_index(name, a, axis, index);
  detail::check_same_device(name, a, src);
  detail::check_same_dtype(name, a, src);
  if (a.dtype() == DType::b8) throw DTypeError(detail::op_prefix(name) + "adds numbers, not bool tensors");
  const std::int64_t count = index.numel();
  if (src.shape() != with_extent(a.shape(), ax, count))
    throw ShapeError(detail::op_prefix(name) + "src has shape " + src.shape().str() + ", where a of shape " +
                     a.shape().str() + " and an index of " + std::to_string(count) + " elements need " +
                     with_extent(a.shape(), ax, count).str());
  const Device dev = a.device();
  const auto fn = kernels::kernel_for(name, dev, kernels::elementwise(dev).index_add);
  const AxisDims d = dims_around(a.shape(), ax);
  const DType dt = a.dtype(), it = index.dtype();
  Tensor out = Tensor::empty(a.shape(), dt, dev);
  {
    NoGradGuard off;  // the copy is this op's part, recorded below as a whole
    copy_(out, a, loc);
  }
  detail::push_into(
      e, name, dev, {src.storage(), index.storage()}, {out.storage()},
      [fn, dt, it, d, count](const OpContext& ctx) {
        fn(dt, it, ctx.in<void>(0), ctx.in<void>(1), ctx.out<void>(0), d.outer, d.len, count, d.inner,
           ctx.native_stream);
      },
      loc, true);
  if (autograd::wants(a, src)) [[unlikely]] {
    const autograd::SavedTensor saved(index);
    autograd::record(name, loc, out, {&a, &src},
                     [saved, ax](const Tensor& g, const autograd::Node& node, Loc l) {
                       std::vector<Tensor> r(2);
                       if (node.needs_grad(0)) r[0] = g;
                       if (node.needs_grad(1)) r[1] = index_select(g, ax, saved.get(node), l);
                       return r;
                     },
                     {saved});
  }
  return out;
}

}  // namespace tide
