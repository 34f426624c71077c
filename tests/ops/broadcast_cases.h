// Shape pairs that exercise numpy's broadcasting, and a reference computed
// here by index arithmetic (no tide code), shared by the CPU and CUDA tests.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <tide/core/shape.h>

namespace tide::testing {

/// Each pair broadcasts; together they cover a row and a column over a
/// matrix, an outer product, a 0-d operand on either side, missing leading
/// axes, axes that merge, shapes that differ only by ones (the flat path),
/// empty results, and all six axes; and rows and columns over matrices
/// whose rows are a whole number of 16-byte packs, directly and once axes
/// merge (the GPU's packed path).
inline const std::vector<std::pair<Shape, Shape>> kBroadcastPairs = {
    {{4, 5}, {5}},
    {{4, 5}, {4, 1}},
    {{4, 1}, {1, 5}},
    {{5}, {4, 5}},
    {{2, 3, 4}, {3, 1}},
    {{2, 1, 4}, {3, 1}},
    {{3, 4, 5}, {1, 4, 5}},
    {{3, 4, 5}, {3, 1, 1}},
    {{5, 1, 3}, {1, 4, 1}},
    {{}, {3, 2}},
    {{3, 2}, {}},
    {{1}, {7}},
    {{1, 3}, {3}},
    {{0, 3}, {3}},
    {{2, 0}, {1}},
    {{2, 3, 4, 5}, {1, 3, 1, 5}},
    {{6, 1, 1, 1, 1, 2}, {1, 2, 3, 1, 1, 1}},
    {{2, 1, 2, 1, 2, 1}, {1, 2, 1, 2, 1, 2}},
    {{33, 129}, {129}},
    {{33, 129}, {33, 1}},
    {{8, 12}, {12}},
    {{8, 12}, {8, 1}},
    {{3, 4, 8}, {1, 4, 8}},
    {{4, 8, 2}, {4, 1, 1}},
};

/// numpy's broadcast shape, by its rule, written independently of tide's.
inline Shape reference_shape(const Shape& a, const Shape& b) {
  const int nd = a.ndim() > b.ndim() ? a.ndim() : b.ndim();
  std::vector<std::int64_t> dims(static_cast<std::size_t>(nd));
  for (int i = 0; i < nd; ++i) {
    const int ia = i - (nd - a.ndim()), ib = i - (nd - b.ndim());
    const std::int64_t ea = ia < 0 ? 1 : a[ia], eb = ib < 0 ? 1 : b[ib];
    dims[static_cast<std::size_t>(i)] = ea == 1 ? eb : ea;
  }
  return Shape(dims.begin(), dims.end());
}

/// Row-major index into `s` of the output element at multi-index `idx`
/// (of the `out` shape), with s's stretched axes held at 0.
inline std::int64_t source_index(const Shape& s, const Shape& out, const std::vector<std::int64_t>& idx) {
  std::int64_t flat = 0;
  const int lead = out.ndim() - s.ndim();
  for (int i = 0; i < s.ndim(); ++i) flat = flat * s[i] + (s[i] == 1 ? 0 : idx[static_cast<std::size_t>(i + lead)]);
  return flat;
}

/// out[i] = op(a[..], b[..]) over the broadcast shape, row-major.
template <typename T, typename Op>
std::vector<T> reference_broadcast(const std::vector<T>& a, const Shape& as, const std::vector<T>& b,
                                   const Shape& bs, Op op) {
  const Shape out = reference_shape(as, bs);
  std::vector<T> r;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(out.ndim()), 0);
  for (std::int64_t n = 0; n < out.numel(); ++n) {
    r.push_back(static_cast<T>(op(a[static_cast<std::size_t>(source_index(as, out, idx))],
                                  b[static_cast<std::size_t>(source_index(bs, out, idx))])));
    for (int d = out.ndim() - 1; d >= 0; --d) {  // next multi-index
      if (++idx[static_cast<std::size_t>(d)] < out[d]) break;
      idx[static_cast<std::size_t>(d)] = 0;
    }
  }
  return r;
}

}  // namespace tide::testing
