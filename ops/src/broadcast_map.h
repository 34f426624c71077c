// numpy's broadcasting for binary elementwise ops: the result's shape, and
// the map (kernels.h) by which a kernel walks both operands into it.
#pragma once

#include <tide/core/shape.h>

#include "kernels.h"

namespace tide::detail {

/// The broadcast of two shapes (numpy's rules: aligned at the last axis, an
/// axis of extent 1 or a missing one stretches to the other's). Throws
/// tide::ShapeError, prefixed by `op`, naming the shapes and the first axis
/// (counted from the end, as numpy does) that neither can stretch.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);

/// How to walk contiguous a and b into contiguous `out`, a shape both
/// broadcast to: axes of extent 1 dropped, neighbours merged where both
/// inputs are contiguous across them. An empty `out` gives one axis of
/// extent 0.
kernels::BroadcastMap broadcast_map(const Shape& out, const Shape& a, const Shape& b);

}  // namespace tide::detail
