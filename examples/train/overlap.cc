#include "overlap.h"

#include <algorithm>
#include <climits>

namespace tide::train {

namespace {

/// Overlap of [a0, a1) with [b0, b1).
std::int64_t overlap(std::int64_t a0, std::int64_t a1, std::int64_t b0, std::int64_t b1) {
  return std::max<std::int64_t>(0, std::min(a1, b1) - std::max(a0, b0));
}

}  // namespace

OverlapFigures& OverlapFigures::operator+=(const OverlapFigures& o) {
  steps += o.steps;
  first_bucket_overlapped += o.first_bucket_overlapped;
  comm_ns += o.comm_ns;
  hidden_ns += o.hidden_ns;
  return *this;
}

void OverlapMeter::add(const BackwardRange& r) { open_.push_back({r, INT64_MAX, INT64_MIN, INT64_MAX, {}}); }

void OverlapMeter::feed(const std::vector<TraceEvent>& events) {
  for (const TraceEvent& ev : events) {
    auto it = std::upper_bound(open_.begin(), open_.end(), ev.push_index,
                               [](std::uint64_t p, const Span& s) { return p < s.range.begin; });
    if (it == open_.begin()) continue;
    --it;
    if (ev.push_index >= it->range.end) continue;
    if (static_cast<StreamKind>(ev.stream % kStreamKinds) == StreamKind::comm) {
      it->comm.emplace_back(ev.start_ns, ev.end_ns);
      it->comm_first = std::min(it->comm_first, ev.start_ns);
    } else {
      it->bwd0 = std::min(it->bwd0, ev.start_ns);
      it->bwd1 = std::max(it->bwd1, ev.end_ns);
    }
  }
}

std::vector<std::pair<std::int64_t, OverlapFigures>> OverlapMeter::close_through(std::int64_t step) {
  std::vector<std::pair<std::int64_t, OverlapFigures>> out;
  while (!open_.empty() && open_.front().range.step <= step) {
    const Span& s = open_.front();
    if (!s.comm.empty() && s.bwd0 <= s.bwd1) {
      OverlapFigures f;
      f.steps = 1;
      if (s.comm_first < s.bwd1) ++f.first_bucket_overlapped;
      for (auto [a, b] : s.comm) {
        f.comm_ns += b - a;
        f.hidden_ns += overlap(a, b, s.bwd0, s.bwd1);
      }
      out.emplace_back(s.range.step, f);
    }
    open_.pop_front();
  }
  return out;
}

void record_overlap(const OverlapFigures& f, TrainResult& res) {
  res.steps_measured = f.steps;
  res.steps_first_bucket_overlapped = f.first_bucket_overlapped;
  if (f.steps) {
    res.comm_ms_per_step = static_cast<double>(f.comm_ns) / 1e6 / static_cast<double>(f.steps);
    res.comm_hidden_fraction = f.comm_ns ? static_cast<double>(f.hidden_ns) / static_cast<double>(f.comm_ns) : 0;
  }
}

}  // namespace tide::train
