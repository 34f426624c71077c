// Tensor indexing from Python (python/src/): t[key] and t[key] = value.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

#include <tide/tide.h>

namespace tide::python {

/// t[key] for basic keys (ints, slices, None and one Ellipsis, alone or in a
/// tuple, as numpy reads them): a view sharing t's storage where the
/// elements are one run in order, a mirror of them otherwise (a column, a
/// step: tide::as_strided), which writes reach both ways. A mask (a tide tensor, nonzero meaning true, or
/// a numpy boolean array) of t's leading extents picks those rows (a
/// blocker for a tide tensor: its values are read); a list or integer
/// array picks rows by index along axis 0 (one index_select).
Tensor get_item(const Tensor& t, const pybind11::object& key);
/// t[key] = value: value (a tensor broadcast to t[key]'s shape, or a number)
/// written into t where the key picks one run of elements; with a tensor or
/// numpy array as the key, written where that mask is nonzero (torch's
/// masked assignment). Every check runs before anything is pushed.
void set_item(Tensor& t, const pybind11::object& key, const pybind11::object& value);

/// t with its axes in `order` (numbers in [-ndim, ndim), each axis once;
/// tide::ShapeError otherwise) as a view: tide::as_strided, a mirror when
/// the order of the elements changes (torch's permute, transpose and .T).
Tensor permuted_view(const Tensor& t, const std::vector<std::int64_t>& order);
/// t with axes a0 and a1 swapped (negative counts from the end), as
/// permuted_view.
Tensor transposed_view(const Tensor& t, int a0, int a1);

}  // namespace tide::python
