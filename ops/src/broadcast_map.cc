#include "broadcast_map.h"

#include <string>

#include <tide/core/error.h>

namespace tide::detail {

namespace {

/// Extent of `s` along output axis `axis` of an `nd`-axis result (1 where s
/// has no such axis).
std::int64_t aligned_extent(const Shape& s, int nd, int axis) {
  const int i = axis - (nd - s.ndim());
  return i < 0 ? 1 : s[i];
}

}  // namespace

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  const int nd = a.ndim() > b.ndim() ? a.ndim() : b.ndim();
  Shape out;
  for (int axis = 0; axis < nd; ++axis) {
    const std::int64_t ea = aligned_extent(a, nd, axis), eb = aligned_extent(b, nd, axis);
    if (ea != eb && ea != 1 && eb != 1)
      throw ShapeError(std::string(op) + ": shapes " + a.str() + " and " + b.str() +
                       " do not broadcast (axis " + std::to_string(axis - nd) + ": " + std::to_string(ea) +
                       " against " + std::to_string(eb) + "; an axis broadcasts only from extent 1)");
    out.push_back(ea == 1 ? eb : ea);
  }
  return out;
}

kernels::BroadcastMap broadcast_map(const Shape& out, const Shape& a, const Shape& b) {
  static_assert(kernels::BroadcastMap::kMaxDims == Shape::kMaxDims);
  kernels::BroadcastMap m;
  m.ndim = 1;  // extent 0 for an empty result: nothing to walk
  if (out.numel() == 0) return m;
  m.ndim = 0;
  const int nd = out.ndim();
  bool last_a = false, last_b = false;
  for (int axis = 0; axis < nd; ++axis) {
    const std::int64_t e = out[axis];
    if (e == 1) continue;  // walks nothing
    const bool wa = aligned_extent(a, nd, axis) == e, wb = aligned_extent(b, nd, axis) == e;
    if (m.ndim > 0 && wa == last_a && wb == last_b) {
      m.extent[m.ndim - 1] *= e;  // each input runs on across the seam, or holds still
      continue;
    }
    m.extent[m.ndim] = e;
    m.a_walks |= static_cast<std::uint8_t>(wa ? 1u << m.ndim : 0u);
    m.b_walks |= static_cast<std::uint8_t>(wb ? 1u << m.ndim : 0u);
    ++m.ndim;
    last_a = wa;
    last_b = wb;
  }
  if (m.ndim == 0) {  // one element
    m.ndim = 1;
    m.extent[0] = 1;
  }
  return m;
}

}  // namespace tide::detail
