// Shapes and layouts. Tensors are contiguous and row-major, so an op that
// keeps the order of the elements is a view: a new handle on the same
// storage with another shape (reshape, flatten, squeeze, unsqueeze). It
// costs no op and no copy, and the engine orders it as its base, since they
// share a storage: an in-place op on a view changes the base, and a read of
// either waits for writes through the other.
//
// Ops that pick elements (slice, select, strided, and transpose or permute
// when they move only axes of extent 1) are views too whenever the elements
// they pick are one run of consecutive elements in order: t[i], t[a:b],
// t[i, a:b], a row of a matrix, any leading-axis slice. A view of part of a
// storage is a Storage made on the same block (Storage's view constructor),
// ordered, version-counted and poisoned as the block. Where the picked
// elements are not one run (a column, a step other than 1 on an axis with
// more than one element before it, a real transpose) these ops return a
// copy into a new contiguous tensor, one op on the tensor's stream, as
// MXNet's NDArray does: tide tensors have no strides. as_strided returns a
// mirror there instead, a view whose writes reach both ways (Python's
// indexing, .T and transpose use it). An in-place op whose operand overlaps
// its target in part (x[1:] += x[:-1]) reads a copy of the operand.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <tide/core/loc.h>
#include <tide/core/shape.h>
#include <tide/core/tensor.h>

namespace tide {

/// A view of `a` with extents `dims`; one extent may be -1, inferred from
/// a's element count. tide::ShapeError when the counts differ.
Tensor reshape(const Tensor& a, const std::vector<std::int64_t>& dims);
/// A one-axis view of a's elements.
Tensor flatten(const Tensor& a);
/// A view without axis `axis` (in [-ndim, ndim)), which must have extent 1.
Tensor squeeze(const Tensor& a, int axis);
/// A view without every axis of extent 1.
Tensor squeeze(const Tensor& a);
/// A view with a new axis of extent 1 before axis `axis` (in [-ndim-1, ndim]:
/// -1 appends one).
Tensor unsqueeze(const Tensor& a, int axis);

/// `a` with axes `axis0` and `axis1` swapped (negative counts from the end):
/// a copy, or a view when the order of the elements is unchanged.
Tensor transpose(const Tensor& a, int axis0 = -2, int axis1 = -1, Loc loc = Loc::current());
/// `a` with its axes in `order` (a permutation of 0..ndim-1): result axis i
/// is a's axis order[i]. A copy, or a view when the order is unchanged.
Tensor permute(const Tensor& a, const std::vector<int>& order, Loc loc = Loc::current());
/// Elements start, start + step, ... before stop along `axis` (a view when
/// they are one run, see above; otherwise a copy), with Python's rules:
/// negative start and stop count from the end, both are clamped to the
/// axis, step may be negative but not 0.
Tensor slice(const Tensor& a, int axis, std::int64_t start, std::int64_t stop, std::int64_t step = 1,
             Loc loc = Loc::current());
/// Element `index` along `axis` (negative counts from the end), that axis
/// dropped: a view when every axis before `axis` has extent 1 (t[i] is one),
/// otherwise a copy. tide::ShapeError when it is out of range.
Tensor select(const Tensor& a, int axis, std::int64_t index, Loc loc = Loc::current());

/// The elements at `index` along `axis`, in its order (torch.index_select):
/// a's shape with that axis's extent index.numel(). `index` is a 0-d or 1-d
/// i32 or i64 tensor on a's device; its values may repeat. A copy, one op;
/// differentiable in a (the gradient is index_add's). An index outside
/// [0, extent) fails the op: on the CPU the error names the index, at the
/// next barrier; on a GPU it is a device-side fault, which ends the device's
/// use, as an out-of-range index does in PyTorch.
Tensor index_select(const Tensor& a, int axis, const Tensor& index, Loc loc = Loc::current());
/// A copy of `a` with src's slices added at `index` along `axis`
/// (torch.index_add): out[..., index[i], ...] += src[..., i, ...], where src
/// has a's shape except index.numel() along `axis`. Repeated indices add up
/// (on a GPU in an order that varies run to run). Differentiable in a and src.
Tensor index_add(const Tensor& a, int axis, const Tensor& index, const Tensor& src, Loc loc = Loc::current());

/// The general form of the four above: a tensor of `shape` whose element at
/// index (i_0, ..., i_k) is a's flat element
/// offset + i_0 * strides[0] + ... + i_k * strides[k]; a view of a when
/// those are one run of consecutive elements in order, a copy otherwise.
/// Strides may be zero or negative; tide::ShapeError when some element
/// reached lies outside a.
Tensor strided(const Tensor& a, const Shape& shape, const std::vector<std::int64_t>& strides,
               std::int64_t offset, Loc loc = Loc::current());

/// strided()'s elements as a view whatever they are (torch.as_strided, and
/// what Python's t[:, j], t[::2], t.T and t.transpose return). When they are
/// one run it is strided()'s view. Otherwise it is a mirror
/// (<tide/core/mirror.h>): a contiguous tensor of its own that the engine
/// keeps equal to a's picked elements, in stream order, with one copy op
/// after each op that writes either side: an in-place op on it changes a,
/// and it reads a's new values after a is written, as a strided view would.
/// The strides must reach each element at most once (tide::ShapeError
/// otherwise: strided() makes a copy there). Differentiable as strided();
/// in-place ops on it are refused while it needs a gradient, as on any
/// tensor. A mirror keeps a's storage alive; a view of it (reshape, a row)
/// is a view of the mirror, and a copy of it (clone, to_numpy) follows
/// nothing. as_strided of a whole mirror is made of the mirror's source
/// where the two picks compose (a.T.T is a view of a), so that repeated
/// picks do not build chains of mirrors.
Tensor as_strided(const Tensor& a, const Shape& shape, const std::vector<std::int64_t>& strides,
                  std::int64_t offset = 0, Loc loc = Loc::current());
/// Whether t is a mirror made by as_strided (or a view of one).
bool is_mirror(const Tensor& t);
/// Whether m is, whole, the mirror that as_strided(a, shape, strides,
/// offset) made of a's storage: kept equal to exactly those elements of a,
/// so writing m into them changes nothing (Python's `t[:, j] += x` ends so).
bool is_mirror_of(const Tensor& m, const Tensor& a, const Shape& shape, const std::vector<std::int64_t>& strides,
                  std::int64_t offset);

/// Writes `value` (of `shape`, a's dtype and device) into the elements of a
/// that strided(a, shape, strides, offset) picks, in place: numpy's
/// t[:, j] = v and t[::2] = v, one op (a view's elements are written by
/// copy_ into the view instead). The strides must reach each element at
/// most once (no zero stride over an extent above 1, no overlapping axes):
/// tide::ShapeError otherwise, as for an element outside a. In-place, so not
/// recorded: refused while grad mode is on and a or value needs a gradient.
void assign_strided_(Tensor& a, const Shape& shape, const std::vector<std::int64_t>& strides, std::int64_t offset,
                     const Tensor& value, Loc loc = Loc::current());

/// The tensors joined along `axis` (negative counts from the end): same
/// dtype, device and rank, equal extents on every other axis. A new tensor;
/// each input's gradient is its slice of the result's.
Tensor cat(const std::vector<Tensor>& tensors, int axis = 0, Loc loc = Loc::current());
/// The tensors (of one shape) joined along a new axis `axis`
/// (in [-ndim-1, ndim]): cat of their unsqueezed views.
Tensor stack(const std::vector<Tensor>& tensors, int axis = 0, Loc loc = Loc::current());

}  // namespace tide
