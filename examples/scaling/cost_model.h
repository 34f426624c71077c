// bench_scaling's sizes and the chapter's cost model (t1 push, t2 run, t3
// return), measured live for one op size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <tide/tide.h>

#include "../common/timing.h"

namespace tide::examples::scaling {

struct OpSize {
  const char* name;
  std::int64_t count;  // f32 elements per tensor
  int steps_scale;     // runs take steps_scale x --steps steps, so that no run is only a few ms long
  int model_ops;       // n, for the cost-model check
};
inline constexpr OpSize kSizes[] = {{"tiny", 64, 10, 2000}, {"medium", 16 << 10, 5, 400}, {"large", 1 << 20, 1, 40}};

inline std::int64_t stream_busy_ns(const tide::Stats& s, const char* name) {
  for (const auto& st : s.streams)
    if (st.name == name) return st.busy_ns;
  return 0;
}

/// `v` reduced over the ranks (avg or max), through tide's own collective.
inline std::vector<double> across_ranks(tide::Runtime& rt, const std::vector<double>& v, tide::ReduceOp op) {
  if (rt.size() == 1) return v;
  tide::Tensor t = tide::from_vector(v);
  return rt.world().all_reduce(t, op).to_vector<double>();
}

// --- the chapter's cost model ------------------------------------------------

struct CostModel {
  const OpSize* size;
  int n;
  // Per op: push (t1) and backend run (t2, compute busy / ops), measured in
  // each mode, since a buffer reused at once (sync) runs faster than n
  // buffers streamed through (async); t3: asking for a result already there.
  double t1_sync_ns, t2_sync_ns, t1_async_ns, t2_async_ns, t3_ns;
  double sync_s, async_s;  // measured
  /// The chapter: sync ~ n (t1 + t2 + t3), async ~ t1 + n t2 + t3.
  double sync_model_s() const { return n * (t1_sync_ns + t2_sync_ns + t3_ns) * 1e-9; }
  double async_model_s() const { return (t1_async_ns + n * t2_async_ns + t3_ns) * 1e-9; }
  /// The chapter assumes the backend is the slower side (n t2 > (n-1) t1);
  /// when pushing is slower, async is bound by the frontend instead.
  double async_bound_s() const {
    return (std::max(n * t1_async_ns + t2_async_ns, t1_async_ns + n * t2_async_ns) + t3_ns) * 1e-9;
  }
  /// Per-op cost of a synchronous round trip that t1 + t2 + t3 leave out:
  /// waking the worker and the frontend noticing completion.
  double handoff_ns() const { return sync_s * 1e9 / n - (t1_sync_ns + t2_sync_ns + t3_ns); }
};

struct LoopTimes {
  double total_s, push_ns_per_op, run_ns_per_op;
};

// n ops y = x + 1, each with a new output; with `sync`, a wait_to_read after each.
inline LoopTimes time_loop(tide::Engine& e, const tide::Tensor& x, int n, bool sync) {
  e.wait_all();
  e.reset_stats();
  std::int64_t push_ns = 0;
  const std::int64_t t0 = now_ns();
  for (int i = 0; i < n; ++i) {
    const std::int64_t a = now_ns();
    tide::Tensor y = x + 1.0;
    push_ns += now_ns() - a;
    if (sync) y.wait_to_read();
  }
  e.wait_all();
  const std::int64_t t1 = now_ns();
  const tide::Stats st = e.stats();
  std::uint64_t ops = 0;
  for (const auto& s : st.streams)
    if (s.name == "cpu:0/compute") ops = s.ops;
  const double busy = static_cast<double>(stream_busy_ns(st, "cpu:0/compute"));
  return {static_cast<double>(t1 - t0) * 1e-9, static_cast<double>(push_ns) / n, ops ? busy / static_cast<double>(ops) : 0};
}

// The chapter's experiment for one op size: n ops synchronously, then
// asynchronously (one wait_all at the end), and the three costs of its model.
inline CostModel measure_cost_model(tide::Runtime& rt, const OpSize& size, int n, int reps) {
  tide::Engine& e = rt.engine();
  e.set_policy(tide::SyncPolicy::unbounded());
  const tide::Tensor x = tide::rand({size.count}, {}, {.seed = 7});
  std::vector<double> sync_s, async_s, t1s, t2s, t1a, t2a, t3;
  for (int rep = 0; rep <= reps; ++rep) {  // rep 0 is a warm-up
    rt.world().barrier();
    const LoopTimes s = time_loop(e, x, n, true);
    const LoopTimes a = time_loop(e, x, n, false);
    // A round trip on a result that is already there: the frontend's cost of
    // asking for it (the blocker bookkeeping), with nothing to wait for.
    tide::Tensor ready = x + 1.0;
    ready.wait_to_read();
    constexpr int kReads = 1000;
    const std::int64_t r0 = now_ns();
    for (int i = 0; i < kReads; ++i) ready.wait_to_read();
    const std::int64_t r1 = now_ns();
    if (rep == 0) continue;
    sync_s.push_back(s.total_s);
    t1s.push_back(s.push_ns_per_op);
    t2s.push_back(s.run_ns_per_op);
    async_s.push_back(a.total_s);
    t1a.push_back(a.push_ns_per_op);
    t2a.push_back(a.run_ns_per_op);
    t3.push_back(static_cast<double>(r1 - r0) / kReads);
  }
  std::vector<double> avg = across_ranks(rt,
                                         {median(t1s), median(t2s), median(t1a), median(t2a), median(t3),
                                          median(sync_s), median(async_s)},
                                         tide::ReduceOp::avg);
  return {&size, n, avg[0], avg[1], avg[2], avg[3], avg[4], avg[5], avg[6]};
}

}  // namespace tide::examples::scaling
