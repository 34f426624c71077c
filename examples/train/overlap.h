// How much of the gradient buckets' communication ran while backward was
// still computing, measured on the engine's timeline as it is recorded.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
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

/// Communication figures of some steps: the bucket ops' time on the comm
/// stream, the part of it inside the span of the step's backward on the
/// compute stream, and how many steps began their first bucket before
/// backward ended.
struct OverlapFigures {
  std::int64_t steps = 0;
  std::int64_t first_bucket_overlapped = 0;
  std::int64_t comm_ns = 0;
  std::int64_t hidden_ns = 0;
  OverlapFigures& operator+=(const OverlapFigures& o);
};

/// Steps are added as they are pushed and the timeline's events fed as they
/// are read (any order, any batching); a step is closed once all its ops
/// are known to have run, and its figures are final then. Events of ops
/// outside the open steps' backward are ignored.
class OverlapMeter {
 public:
  void add(const BackwardRange& r);
  void feed(const std::vector<TraceEvent>& events);
  /// Closes the open steps up to and including `step`: the figures of
  /// each one with communication traced.
  std::vector<std::pair<std::int64_t, OverlapFigures>> close_through(std::int64_t step);

 private:
  struct Span {
    BackwardRange range;
    std::int64_t bwd0, bwd1, comm_first;
    std::vector<std::pair<std::int64_t, std::int64_t>> comm;
  };
  std::deque<Span> open_;  // in push order
};

/// The run-wide figures of `f` into `res` (comm_* and steps_* fields).
void record_overlap(const OverlapFigures& f, TrainResult& res);

}  // namespace tide::train
