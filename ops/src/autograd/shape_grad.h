// Shape helpers of the backward formulas: a broadcast gradient summed back
// to its input's shape, and a reduced gradient stretched back over it.
#pragma once

#include <tide/core/loc.h>
#include <tide/core/tensor.h>

namespace tide::autograd {

/// g (of a broadcast result's shape) summed over the axes that `shape`
/// stretched, to `shape`; g itself when the shapes are equal.
Tensor sum_to(const Tensor& g, const Shape& shape, Loc loc);

/// g repeated along the axes where its extent is 1 (or missing, at the
/// front) up to `shape`: one strided copy with zero strides.
Tensor expand(const Tensor& g, const Shape& shape, Loc loc);

}  // namespace tide::autograd
