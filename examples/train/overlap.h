// How much of the gradient buckets' communication ran while backward was
// still computing, measured on the engine's timeline.
#pragma once

#include <cstdint>
#include <vector>

#include <tide/core/engine.h>

#include "trainer.h"

namespace tide::train {

/// The push indices [begin, end) of one step's backward (its gradient
/// buckets' pack, all-reduce and unpack included).
struct BackwardRange {
  std::uint64_t begin, end;
  std::int64_t step;
};

/// Reads the engine's trace and stops tracing. Per step after the first
/// `warm` of `ranges`: the span of its backward on the compute stream and its
/// bucket ops on the comm stream (both found by push index). Fills the
/// comm_* and steps_* fields of `res`.
void measure_overlap(Engine& e, const std::vector<BackwardRange>& ranges, std::int64_t warm, TrainResult& res);

}  // namespace tide::train
