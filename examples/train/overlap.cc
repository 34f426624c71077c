#include "overlap.h"

#include <algorithm>
#include <climits>
#include <utility>

namespace tide::train {

namespace {

/// Overlap of [a0, a1) with [b0, b1).
std::int64_t overlap(std::int64_t a0, std::int64_t a1, std::int64_t b0, std::int64_t b1) {
  return std::max<std::int64_t>(0, std::min(a1, b1) - std::max(a0, b0));
}

}  // namespace

void measure_overlap(Engine& e, const std::vector<BackwardRange>& ranges, std::int64_t warm, TrainResult& res) {
  std::vector<TraceEvent> trace = e.take_trace();
  e.set_tracing(false);
  struct Span {
    std::int64_t bwd0 = INT64_MAX, bwd1 = INT64_MIN, comm_first = INT64_MAX;
    std::vector<std::pair<std::int64_t, std::int64_t>> comm;
  };
  std::vector<Span> spans(ranges.size());
  for (const TraceEvent& ev : trace) {
    auto it = std::upper_bound(ranges.begin(), ranges.end(), ev.push_index,
                               [](std::uint64_t p, const BackwardRange& r) { return p < r.begin; });
    if (it == ranges.begin()) continue;
    --it;
    if (ev.push_index >= it->end) continue;
    Span& s = spans[static_cast<std::size_t>(it - ranges.begin())];
    const auto kind = static_cast<StreamKind>(ev.stream % kStreamKinds);
    if (kind == StreamKind::comm) {
      s.comm.emplace_back(ev.start_ns, ev.end_ns);
      s.comm_first = std::min(s.comm_first, ev.start_ns);
    } else {
      s.bwd0 = std::min(s.bwd0, ev.start_ns);
      s.bwd1 = std::max(s.bwd1, ev.end_ns);
    }
  }
  std::int64_t comm_ns = 0, hidden_ns = 0;
  for (std::size_t i = static_cast<std::size_t>(warm); i < spans.size(); ++i) {
    const Span& s = spans[i];
    if (s.comm.empty() || s.bwd1 < s.bwd0) continue;
    ++res.steps_measured;
    if (s.comm_first < s.bwd1) ++res.steps_first_bucket_overlapped;
    for (auto [a, b] : s.comm) {
      comm_ns += b - a;
      hidden_ns += overlap(a, b, s.bwd0, s.bwd1);
    }
  }
  if (res.steps_measured) {
    res.comm_ms_per_step = static_cast<double>(comm_ns) / 1e6 / static_cast<double>(res.steps_measured);
    res.comm_hidden_fraction = comm_ns ? static_cast<double>(hidden_ns) / static_cast<double>(comm_ns) : 0;
  }
}

}  // namespace tide::train
