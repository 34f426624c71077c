#include "shape_grad.h"

#include <cstdint>
#include <vector>

#include <tide/ops/creation.h>
#include <tide/ops/reduction.h>
#include <tide/ops/views.h>

namespace tide::autograd {

Tensor sum_to(const Tensor& g, const Shape& shape, Loc loc) {
  if (g.shape() == shape) return g;
  // Nothing to sum (an extent of 0 in the result): the gradient is zeros.
  if (g.numel() == 0) return zeros(shape, {g.dtype(), g.device()}, loc);
  Tensor r = g;
  const int lead = g.ndim() - shape.ndim();
  if (lead > 0) {  // the leading axes, as one: a single reduction
    std::vector<std::int64_t> dims{-1};
    for (int d = lead; d < g.ndim(); ++d) dims.push_back(g.shape()[d]);
    r = sum(reshape(r, dims), 0, loc);
  }
  for (int d = 0; d < shape.ndim(); ++d)
    if (shape[d] == 1 && r.shape()[d] != 1) r = unsqueeze(sum(r, d, loc), d);
  return r;
}

Tensor expand(const Tensor& g, const Shape& shape, Loc loc) {
  if (g.shape() == shape) return g;
  const int lead = shape.ndim() - g.ndim();
  std::vector<std::int64_t> strides(static_cast<std::size_t>(shape.ndim()), 0);
  std::int64_t step = 1;
  for (int d = g.ndim() - 1; d >= 0; --d) {
    if (g.shape()[d] != 1) strides[static_cast<std::size_t>(d + lead)] = step;
    step *= g.shape()[d];
  }
  return strided(g, shape, strides, 0, loc);
}

}  // namespace tide::autograd
