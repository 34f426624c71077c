// Tensor indexing from Python (python/src/): t[key] and t[key] = value.
#pragma once

#include <pybind11/pybind11.h>

#include <tide/tide.h>

namespace tide::python {

/// t[key] for basic keys (ints, slices, None and one Ellipsis, alone or in a
/// tuple, as numpy reads them): a view where the elements are one run in
/// order, a copy otherwise. A mask (a tide tensor, nonzero meaning true, or
/// a numpy boolean array) of t's leading extents picks those rows (a
/// blocker for a tide tensor: its values are read); a list or integer
/// array picks rows by index along axis 0 (one index_select).
Tensor get_item(const Tensor& t, const pybind11::object& key);
/// t[key] = value: value (a tensor broadcast to t[key]'s shape, or a number)
/// written into t where the key picks one run of elements; with a tensor or
/// numpy array as the key, written where that mask is nonzero (torch's
/// masked assignment). Every check runs before anything is pushed.
void set_item(Tensor& t, const pybind11::object& key, const pybind11::object& value);

}  // namespace tide::python
