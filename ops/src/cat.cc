// cat and stack: one output, filled with -0 first, then each input added
// into its block by the strided scatter-add kernel. The blocks are
// disjoint, and -0 + x is x for every x (+0, -0, NaN and the infinities
// included), so the adds copy. One op per input, each reading
// only that input; the backward slices the gradient.
#include <tide/ops/views.h>
#include <tide/ops/elementwise.h>

#include <string>

#include "autograd/record.h"
#include "kernels.h"
#include "op_util.h"
#include "views_internal.h"

namespace tide {

using namespace detail;

Tensor cat(const std::vector<Tensor>& tensors, int axis, Loc loc) {
  const char* name = "cat";
  if (tensors.empty()) throw ValueError(op_prefix(name) + "needs at least one tensor");
  const Tensor& first = tensors.front();
  Engine& e = engine_of(name, first, "tensors[0]");
  const int ax = normalize_axis(name, first, axis);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    const std::string role = "tensors[" + std::to_string(i) + "]";
    engine_of(name, t, role.c_str());
    check_same_device(name, first, t);
    check_same_dtype(name, first, t);
    bool fits = t.ndim() == first.ndim();
    for (int d = 0; fits && d < t.ndim(); ++d) fits = d == ax || t.shape()[d] == first.shape()[d];
    if (!fits)
      throw ShapeError(op_prefix(name) + role + " has shape " + t.shape().str() + ", which differs from " +
                       first.shape().str() + " outside axis " + std::to_string(axis));
    total += t.shape()[ax];
  }
  std::vector<std::int64_t> dims(first.shape().begin(), first.shape().end());
  dims[static_cast<std::size_t>(ax)] = total;
  const Shape shape(dims.begin(), dims.end());
  const Device dev = first.device();
  const DType dt = first.dtype();
  if (dt == DType::b8) {  // the scatter-add kernels add numbers: bools are joined as i32
    std::vector<Tensor> ints;
    for (const Tensor& t : tensors) ints.push_back(to_dtype(t, DType::i32, loc));
    return to_dtype(cat(ints, axis, loc), DType::b8, loc);
  }
  // Each input's block of the output: the output's strides, from the
  // input's first element along the axis. Checked before anything is pushed.
  std::vector<std::int64_t> strides(static_cast<std::size_t>(shape.ndim()));
  for (std::int64_t d = shape.ndim() - 1, step = 1; d >= 0; --d) {
    strides[static_cast<std::size_t>(d)] = step;
    step *= shape[static_cast<int>(d)];
  }
  std::vector<std::shared_ptr<const kernels::StridedMap>> maps;
  std::int64_t at = 0;
  for (const Tensor& t : tensors) {
    maps.push_back(t.numel() ? strided_map(name, shape.numel(), t.shape(), strides, at * strides[static_cast<std::size_t>(ax)]) : nullptr);
    at += t.shape()[ax];
  }
  const auto fn = kernels::kernel_for(name, dev, kernels::elementwise(dev).strided_scatter_add);
  Tensor out = full(shape, -0.0, {dt, dev}, loc);  // integers: 0
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (!maps[i]) continue;
    push_into(
        e, name, dev, {tensors[i].storage()}, {out.storage()},
        [fn, dt, map = maps[i]](const OpContext& ctx) {
          fn(dt, ctx.in<void>(0), ctx.out<void>(0), *map, ctx.native_stream);
        },
        loc);
  }
  if (autograd::wants(tensors)) autograd::record_cat(out, tensors, ax, loc);
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int axis, Loc loc) {
  const char* name = "stack";
  if (tensors.empty()) throw ValueError(op_prefix(name) + "needs at least one tensor");
  const Tensor& first = tensors.front();
  engine_of(name, first, "tensors[0]");
  const int nd = first.ndim();
  if (axis < -nd - 1 || axis > nd)
    throw ShapeError(op_prefix(name) + "axis " + std::to_string(axis) + " is out of range for tensors of " +
                     std::to_string(nd) + " axes (valid: " + std::to_string(-nd - 1) + " to " + std::to_string(nd) +
                     ")");
  std::vector<Tensor> parts;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::string role = "tensors[" + std::to_string(i) + "]";
    engine_of(name, tensors[i], role.c_str());
    if (tensors[i].shape() != first.shape())
      throw ShapeError(op_prefix(name) + role + " has shape " + tensors[i].shape().str() + ", tensors[0] " +
                       first.shape().str() + ": stack takes tensors of one shape");
    parts.push_back(unsqueeze(tensors[i], axis));  // views: nothing pushed
  }
  return cat(parts, axis < 0 ? axis + nd + 1 : axis, loc);
}

}  // namespace tide
