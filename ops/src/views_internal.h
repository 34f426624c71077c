// strided()'s map and its inverse (for its backward and cat), and where a
// tensor's bytes lie once mirrors are followed to their sources (for the
// optimizers' overlap check): not part of the public API.
#pragma once

#include <cstddef>
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

/// The block whose bytes a tensor's elements are, or follow when it is a
/// mirror (<tide/core/mirror.h>): its source's block, and so on up a chain
/// of mirrors; and the bytes of it they may reach: the tensor's own when it
/// is no mirror (exact), else the whole last source's (a bound).
struct AliasSpan {
  const Storage* block;
  std::size_t begin, end;
  bool through_mirror;
};
AliasSpan alias_span(const Tensor& t);

/// Whether a and b collide in one op that writes those `written` and reads
/// the others, each in place, mirrors counted as the engine writes them
/// back after the op (each mirror written is copied back whole into its
/// source, and on up). Where their paths of mirrors first reach one block:
/// a read collides with the elements the other changes; two writes where
/// either's write-back lands on an element the other changed. Tensors of
/// one block: their bytes overlap. Costs a bit per element of the meeting
/// where a mirror is on either side.
bool shares_memory(const Tensor& a, bool a_written, const Tensor& b, bool b_written);

/// Whether t is part, not all, of a mirror's block: the engine refuses an
/// op that writes it and another block of the same tree of mirrors (the
/// mirror is written back whole).
bool writes_part_of_a_mirror(const Tensor& t);

}  // namespace tide::detail
