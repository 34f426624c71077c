// Reductions, over all elements (a 0-d result) or along one axis (that axis
// removed; a negative axis counts from the end). Sums run in a fixed order,
// so results are reproducible run to run.
#pragma once

#include <tide/ops/creation.h>

namespace tide {

Tensor sum(const Tensor& a, Loc loc = Loc::current());
Tensor sum(const Tensor& a, int axis, Loc loc = Loc::current());
/// Floating dtypes only.
Tensor mean(const Tensor& a, Loc loc = Loc::current());
Tensor mean(const Tensor& a, int axis, Loc loc = Loc::current());
/// Needs at least one element along what it reduces.
Tensor max(const Tensor& a, Loc loc = Loc::current());
Tensor max(const Tensor& a, int axis, Loc loc = Loc::current());

}  // namespace tide
