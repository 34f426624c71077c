// The reduction of a collective done by tide itself: the ranks' payloads of
// one exchange (MpiGroup::exchange) combined in rank order, so that every
// rank computes the same bits. Internal to comm/.
#pragma once

#include <cstdint>

#include <tide/comm/types.h>
#include <tide/core/dtype.h>

namespace tide::detail {

/// out[i] = parts[0][i] op parts[1][i] op ... op parts[ranks-1][i], for `n`
/// elements of type `t`, combined left to right. sum and avg add (avg's
/// division is the caller's); integers wrap, as two's complement does; max
/// and min give NaN where any rank has one. `out` may be any buffer but the
/// parts.
void combine_in_rank_order(void* out, const unsigned char* const* parts, int ranks, std::int64_t n, DType t,
                           ReduceOp op);

}  // namespace tide::detail
