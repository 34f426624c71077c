// Reductions, over all elements (a 0-d result) or along one axis (that axis
// removed; a negative axis counts from the end). Sums run in a fixed order
// (index order along the axis), accumulating in double for f32 and f64 and in
// int64 for i32, rounding to the dtype once: results are reproducible run to
// run and on every engine, device and stream. On a CUDA device the same
// accumulators add in a fixed tree order that depends only on the shape:
// still reproducible run to run, but an f32 or f64 sum or mean may differ
// from the CPU's in the last bit. i32 sums and every max are identical on
// all devices (but for the sign of a zero maximum when +0 and -0 tie).
#pragma once

#include <tide/ops/creation.h>

namespace tide {

/// The sum, in a's dtype; of a bool tensor, the count of true values (i64).
Tensor sum(const Tensor& a, Loc loc = Loc::current());
Tensor sum(const Tensor& a, int axis, Loc loc = Loc::current());
/// Whether any (all) elements are nonzero (NaN too), over the whole tensor
/// or along an axis: bool results. An empty tensor: any false, all true.
Tensor any(const Tensor& a, Loc loc = Loc::current());
Tensor any(const Tensor& a, int axis, Loc loc = Loc::current());
Tensor all(const Tensor& a, Loc loc = Loc::current());
Tensor all(const Tensor& a, int axis, Loc loc = Loc::current());
/// Floating dtypes only.
Tensor mean(const Tensor& a, Loc loc = Loc::current());
Tensor mean(const Tensor& a, int axis, Loc loc = Loc::current());
/// Needs at least one element along what it reduces.
Tensor max(const Tensor& a, Loc loc = Loc::current());
Tensor max(const Tensor& a, int axis, Loc loc = Loc::current());
/// The smallest element, likewise (a NaN wins; the gradient is shared among
/// the elements equal to it).
Tensor min(const Tensor& a, Loc loc = Loc::current());
Tensor min(const Tensor& a, int axis, Loc loc = Loc::current());

}  // namespace tide
