// The inverse of strided(), for its backward: not part of the public API.
#pragma once

#include <cstdint>
#include <vector>

#include <tide/core/loc.h>
#include <tide/core/tensor.h>

namespace tide::detail {

/// A new tensor of `shape` (zeros), to whose flat element offset +
/// sum_d i_d * strides[d] each element (i_0, ..., i_k) of `src` is added:
/// the gradient of strided(a, src.shape(), strides, offset) for an `a` of
/// `shape`. Elements that several of src's reach (zero strides) sum. The
/// same checks as strided()'s.
Tensor strided_scatter_add(const Tensor& src, const Shape& shape, const std::vector<std::int64_t>& strides,
                           std::int64_t offset, Loc loc);

}  // namespace tide::detail
