// strided()'s map and its inverse (for its backward and cat): not part of
// the public API.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <tide/core/loc.h>
#include <tide/core/tensor.h>

#include "kernels.h"

namespace tide::detail {

/// The map of strided(a, shape, strides, offset) for an `a` of `n`
/// elements, after checking that every element it reaches lies inside
/// (tide::ShapeError naming `name` otherwise).
std::shared_ptr<const kernels::StridedMap> strided_map(const char* name, std::int64_t n, const Shape& shape,
                                                       const std::vector<std::int64_t>& strides,
                                                       std::int64_t offset);

/// A new tensor of `shape` (zeros), to whose flat element offset +
/// sum_d i_d * strides[d] each element (i_0, ..., i_k) of `src` is added:
/// the gradient of strided(a, src.shape(), strides, offset) for an `a` of
/// `shape`. Elements that several of src's reach (zero strides) sum. The
/// same checks as strided()'s.
Tensor strided_scatter_add(const Tensor& src, const Shape& shape, const std::vector<std::int64_t>& strides,
                           std::int64_t offset, Loc loc);

}  // namespace tide::detail
