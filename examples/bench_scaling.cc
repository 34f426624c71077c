// bench_scaling: how asynchronous dispatch scales with lookahead, op size and
// ranks. Each configuration runs a synthetic data-parallel training step:
// elementwise forward and backward ops that each allocate a new output, an
// all-reduce (avg) of the gradient through the world communicator, an SGD
// update, and a loss-like scalar accumulated on the device and read once, at
// the end. Lookahead is the sync policy's max_inflight_steps (k = 1, 2, 4),
// no cap at all ("unbounded"), or "sync": a wait_to_read after every op, the
// chapter's synchronous mode. The chapter's cost model (t1 push, t2 run, t3
// return) is then checked live, per op size.
//
// Every number is a median over repetitions on each rank, then averaged
// across ranks (peak queued bytes: the largest rank). Rank 0 prints and
// writes the files.
//
//   mpirun -np R bench_scaling [--steps N] [--reps N] [--quick]
//                              [--json FILE] [--dat FILE]
//
// Exit status: 0 when every check passes, 3 when one fails (the files are
// written either way), 1 or 2 on errors.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <latch>
#include <string>
#include <vector>


#include <sys/resource.h>  // getrusage: page faults

#include <tide/tide.h>

#include "common/json_writer.h"
#include "common/machine.h"
#include "common/timing.h"
#include "scaling/cost_model.h"
#include "scaling/options.h"

namespace {

using namespace tide::examples::scaling;
using tide::examples::median;
using tide::examples::now_ns;

struct Lookahead {
  const char* name;
  bool sync;        // wait_to_read after every op
  std::uint32_t k;  // max_inflight_steps; 0 without sync: no cap at all
  bool unbounded() const { return !sync && k == 0; }
};
constexpr Lookahead kLookaheads[] = {
    {"sync", true, 0}, {"k=1", false, 1}, {"k=2", false, 2}, {"k=4", false, 4}, {"unbounded", false, 0}};

tide::SyncPolicy policy_for(const Lookahead& l) {
  if (l.sync) return tide::SyncPolicy{};  // the caps never bind: nothing is ever queued for long
  return l.k ? tide::SyncPolicy::steps(l.k) : tide::SyncPolicy::unbounded();
}

// --- the training step -------------------------------------------------------

struct TrainState {
  tide::Tensor x, w, loss;
};

TrainState make_state(std::int64_t count) {
  // A fixed seed: every rank and every run starts from the same numbers, so
  // the final loss must come out bit for bit the same in every lookahead mode.
  return {tide::rand({count}, {}, {.seed = 7}), tide::full({count}, 0.5), tide::zeros(tide::Shape())};
}

// One step: 7 elementwise ops with new outputs (h1..h5, grad and the new w,
// compute stream), the all-reduce's new output (comm stream), and two new
// scalars for the loss. Values stay bounded (w moves by at most ~1e-3 per step), so no
// denormals or infinities slow the kernels down. In sync mode every op is
// followed by a wait_to_read. Returns the bytes of the outputs it allocated.
std::int64_t train_step(TrainState& s, tide::Communicator& world, bool sync) {
  std::int64_t bytes = 0;
  auto out = [&](tide::Tensor t) {
    bytes += static_cast<std::int64_t>(t.nbytes());
    if (sync) t.wait_to_read();
    return t;
  };
  tide::Tensor h1 = out(s.x * s.w);  // forward
  tide::Tensor h2 = out(h1 + 1.0);
  tide::Tensor h3 = out(tide::relu(h2));
  s.loss = out(s.loss + out(tide::mean(h3)));  // stays on the device
  tide::Tensor h4 = out(h3 * s.x);             // backward
  tide::Tensor h5 = out(h4 - h1);
  tide::Tensor grad = out(h5 * 1e-3);
  tide::Tensor g = out(world.all_reduce(grad, tide::ReduceOp::avg));
  s.w = out(s.w - g);  // update
  return bytes;
}

struct StepBytes {
  std::int64_t outputs;  // the step's own sum over the tensors it created
  std::int64_t engine;   // what the engine counts as queued for one step
};

// One step's bytes, both ways. For the engine's count, park the compute
// worker on a latch, push one step (everything in it then waits, directly or
// through the dependency tracker, for the parked worker), read the queued
// bytes, release.
StepBytes step_bytes(tide::Runtime& rt, std::int64_t count) {
  tide::Engine& e = rt.engine();
  e.set_policy(tide::SyncPolicy::unbounded());
  TrainState s = make_state(count);
  e.wait_all();
  std::latch release(1);
  tide::OpDesc hold;
  hold.name = "hold";
  hold.device = tide::cpu(0);
  hold.stream = static_cast<int>(tide::StreamKind::compute);
  hold.fn = [&release](const tide::OpContext&) { release.wait(); };
  e.push(std::move(hold));
  StepBytes b{};
  try {
    auto step = rt.step();
    b.outputs = train_step(s, rt.world(), false);
    b.engine = static_cast<std::int64_t>(e.stats().queued_bytes);
  } catch (...) {
    release.count_down();  // let the parked op finish before `release` goes away
    e.wait_all();
    throw;
  }
  release.count_down();
  e.wait_all();
  return b;
}

// --- one configuration -------------------------------------------------------

struct RunSample {
  double wall_s = 0;
  double stall_frac = 0, blocked_frac = 0, idle_frac = 0, comm_busy_frac = 0;
  double peak_bytes = 0, blockers_per_step = 0;
  double faults_per_step = 0;  // minor page faults of the process: fresh memory being touched
  float loss = 0;
};

std::int64_t minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

RunSample run_steps(tide::Runtime& rt, const OpSize& size, const Lookahead& la, int steps) {
  tide::Engine& e = rt.engine();
  e.set_policy(policy_for(la));
  TrainState s = make_state(size.count);
  e.wait_all();
  rt.world().barrier();  // the ranks start together
  e.reset_stats();
  const std::int64_t faults0 = minor_faults();
  const std::int64_t t0 = now_ns();
  for (int i = 0; i < steps; ++i) {
    auto step = rt.step();
    train_step(s, rt.world(), la.sync);
  }
  const std::uint64_t loop_blockers = e.stats().blockers;
  RunSample r;
  r.loss = s.loss.item<float>();  // the only read of the loss
  e.wait_all();
  const double wall_ns = static_cast<double>(now_ns() - t0);
  r.faults_per_step = static_cast<double>(minor_faults() - faults0) / steps;
  const tide::Stats st = e.stats();
  r.wall_s = wall_ns * 1e-9;
  r.stall_frac = static_cast<double>(st.stalled_ns) / wall_ns;
  r.blocked_frac = static_cast<double>(st.blocked_ns) / wall_ns;
  r.idle_frac = 1 - static_cast<double>(stream_busy_ns(st, "cpu:0/compute")) / wall_ns;
  r.comm_busy_frac = static_cast<double>(stream_busy_ns(st, "cpu:0/comm")) / wall_ns;
  r.peak_bytes = static_cast<double>(st.peak_queued_bytes);
  r.blockers_per_step = static_cast<double>(loop_blockers) / steps;
  return r;
}

struct Result {
  const OpSize* size;
  const Lookahead* la;
  int steps;
  double wall_s, stall_frac, blocked_frac, idle_frac, comm_busy_frac, blockers_per_step, faults_per_step;
  double peak_bytes;  // the largest rank's
  float loss;         // rank 0's, from the first repetition
};

// Medians over one configuration's runs, then across ranks.
Result summarize(tide::Runtime& rt, const OpSize& size, const Lookahead& la, int steps,
                 const std::vector<RunSample>& runs) {
  auto med = [&](double RunSample::*field) {
    std::vector<double> v;
    for (const RunSample& r : runs) v.push_back(r.*field);
    return median(v);
  };
  std::vector<double> avg = across_ranks(
      rt,
      {med(&RunSample::wall_s), med(&RunSample::stall_frac), med(&RunSample::blocked_frac),
       med(&RunSample::idle_frac), med(&RunSample::comm_busy_frac), med(&RunSample::blockers_per_step),
       med(&RunSample::faults_per_step)},
      tide::ReduceOp::avg);
  std::vector<double> peak = across_ranks(rt, {med(&RunSample::peak_bytes)}, tide::ReduceOp::max);
  return {&size, &la, steps, avg[0], avg[1], avg[2], avg[3], avg[4], avg[5], avg[6], peak[0], runs.front().loss};
}

// --- checks and verdicts -----------------------------------------------------

struct Growth {
  const OpSize* size;
  int steps_a, steps_b;
  double peak_a, peak_b;  // bytes
  bool grows() const { return peak_b >= 1.5 * peak_a; }
};

struct SizeInfo {
  std::int64_t step_bytes, step_bytes_measured;  // the outputs' sum; the engine's count
};

double ms_per_step(const Result& r) { return r.wall_s * 1e3 / r.steps; }

const Result& sync_of(const std::vector<Result>& all, const OpSize* size) {
  for (const Result& r : all)
    if (r.size == size && r.la->sync) return r;
  return all.front();
}

bool peak_ok(const Result& r, const SizeInfo& info) {
  return r.peak_bytes <= (r.la->k + 1.0) * static_cast<double>(info.step_bytes);
}

std::string verdict(const Result& r, const Result& sync, const SizeInfo& info, const Growth* growth) {
  char buf[256];
  const double steps_mem = r.peak_bytes / static_cast<double>(info.step_bytes);
  const double speedup = ms_per_step(sync) / ms_per_step(r);
  if (r.la->sync) {
    std::snprintf(buf, sizeof buf, "sync: %.0f blockers per step, frontend blocked %.0f%% of the time", r.blockers_per_step,
                  100 * r.blocked_frac);
  } else if (r.la->unbounded() && growth) {
    std::snprintf(buf, sizeof buf, "unbounded: %.1f steps of memory queued after %d steps, %.1f after %d (%s), %.2fx sync",
                  growth->peak_a / static_cast<double>(info.step_bytes), growth->steps_a,
                  growth->peak_b / static_cast<double>(info.step_bytes), growth->steps_b,
                  growth->grows() ? "grows" : "does not grow", speedup);
  } else {
    std::snprintf(buf, sizeof buf, "%s: runahead bounded at %.1f steps of memory (limit %u), %.2fx %s than sync", r.la->name,
                  steps_mem, r.la->k + 1, speedup >= 1 ? speedup : 1 / speedup, speedup >= 1 ? "faster" : "slower");
  }
  return buf;
}

// --- output ------------------------------------------------------------------

struct Report {
  std::vector<Result> results;
  std::vector<SizeInfo> info;  // per kSizes entry
  std::vector<Growth> growth;  // per kSizes entry
  std::vector<CostModel> model;
  std::vector<bool> loss_same;  // per kSizes entry: one final loss in every mode
};

std::size_t size_index(const OpSize* s) { return static_cast<std::size_t>(s - kSizes); }

int lookahead_index(const Lookahead* l) { return static_cast<int>(l - kLookaheads); }

void print_report(const Report& rep, int ranks, const Config& cfg) {
  std::printf("tide bench_scaling: %d rank%s, %d reps (median; averaged across ranks, peak bytes: largest rank)\n",
              ranks, ranks > 1 ? "s" : "", cfg.reps);
  std::printf("step: 7 elementwise ops with new outputs + all-reduce(avg) + loss accumulated on the device\n\n");
  std::printf("%-7s %-9s %5s %9s %9s %7s %8s %7s %7s %11s %9s %9s %8s\n", "size", "lookahead", "steps", "steps/s",
              "ms/step", "stall%", "blocked%", "idle%", "comm%", "peak(steps)", "blk/step", "flt/step", "vs sync");
  for (const Result& r : rep.results) {
    const SizeInfo& info = rep.info[size_index(r.size)];
    std::printf("%-7s %-9s %5d %9.0f %9.3f %7.1f %8.1f %7.1f %7.1f %11.2f %9.2f %9.0f %7.2fx\n", r.size->name,
                r.la->name, r.steps, r.steps / r.wall_s, ms_per_step(r), 100 * r.stall_frac, 100 * r.blocked_frac,
                100 * r.idle_frac, 100 * r.comm_busy_frac, r.peak_bytes / static_cast<double>(info.step_bytes),
                r.blockers_per_step, r.faults_per_step, ms_per_step(sync_of(rep.results, r.size)) / ms_per_step(r));
  }
  std::printf("\nstall%%: frontend at the sync-policy gate; blocked%%: frontend in wait_to_read/item; idle%%: compute\n"
              "stream not running an op; comm%%: comm stream busy (a collective's wait for its peers included);\n"
              "peak(steps): peak queued bytes / one step's bytes; flt/step: minor page faults per step\n\n");
  for (std::size_t i = 0; i < std::size(kSizes); ++i)
    std::printf("%-7s one step allocates %lld bytes (engine's count with the worker parked: %lld)\n", kSizes[i].name,
                static_cast<long long>(rep.info[i].step_bytes), static_cast<long long>(rep.info[i].step_bytes_measured));
  std::printf("\n");
  for (const Result& r : rep.results) {
    const std::size_t si = size_index(r.size);
    const Growth* g = r.la->unbounded() ? &rep.growth[si] : nullptr;
    std::printf("%-7s %s\n", r.size->name, verdict(r, sync_of(rep.results, r.size), rep.info[si], g).c_str());
  }

  std::printf("\ncost model, n x (y = x + 1, new output): t1 push, t2 backend run (compute busy / ops), each in its\n"
              "own mode; t3 wait_to_read of a result already computed. sync ~ n(t1+t2+t3), async ~ t1 + n t2 + t3\n");
  std::printf("%-7s %5s %7s %7s %8s %8s %5s | %9s %9s %5s | %9s %9s %5s %9s %5s | %9s\n", "size", "n", "t1 sync",
              "t1 asyn", "t2 sync", "t2 async", "t3", "sync pred", "measured", "ratio", "asyn pred", "measured", "ratio",
              "bound", "ratio", "handoff");
  for (const CostModel& m : rep.model)
    std::printf("%-7s %5d %7.0f %7.0f %8.0f %8.0f %5.0f | %7.3fms %7.3fms %5.2f | %7.3fms %7.3fms %5.2f %7.3fms %5.2f "
                "| %7.0fns\n",
                m.size->name, m.n, m.t1_sync_ns, m.t1_async_ns, m.t2_sync_ns, m.t2_async_ns, m.t3_ns,
                m.sync_model_s() * 1e3, m.sync_s * 1e3, m.sync_s / m.sync_model_s(), m.async_model_s() * 1e3,
                m.async_s * 1e3, m.async_s / m.async_model_s(), m.async_bound_s() * 1e3, m.async_s / m.async_bound_s(),
                m.handoff_ns());
  std::printf("times in ns per op; ratio = measured / predicted; bound = max(n t1 + t2, t1 + n t2) + t3 (the\n"
              "frontend may be the slower side); handoff = measured sync per op - (t1 + t2 + t3)\n\n");
}

struct Check {
  std::string what;
  bool pass;
  const char* quantity = nullptr;  // what `measured` and `limit` are, when the check has numbers
  double measured = 0, limit = 0;
  const char* rule = "";  // "measured <= limit" or "measured >= limit"
};

std::vector<Check> checks(const Report& rep) {
  std::vector<Check> out;
  char buf[256];
  for (const Result& r : rep.results) {
    if (r.la->sync || r.la->unbounded()) continue;
    const SizeInfo& info = rep.info[size_index(r.size)];
    const double ratio = r.peak_bytes / static_cast<double>(info.step_bytes);
    std::snprintf(buf, sizeof buf, "%s %s: peak queued bytes <= (k+1) x one step's bytes (%.2f <= %u)", r.size->name,
                  r.la->name, ratio, r.la->k + 1);
    out.push_back({buf, peak_ok(r, info), "peak_queued_bytes / step_bytes", ratio, r.la->k + 1.0,
                   "measured <= limit"});
  }
  for (const Growth& g : rep.growth) {
    std::snprintf(buf, sizeof buf, "%s unbounded: the peak grows with the steps (%d -> %d steps: %.2fx >= 1.5x)",
                  g.size->name, g.steps_a, g.steps_b, g.peak_b / g.peak_a);
    out.push_back({buf, g.grows(), "peak at 2x steps / peak at 1x steps", g.peak_b / g.peak_a, 1.5,
                   "measured >= limit"});
  }
  for (std::size_t i = 0; i < std::size(kSizes); ++i) {
    out.push_back({std::string(kSizes[i].name) + ": the same final loss in every lookahead mode and run",
                   rep.loss_same[i]});
    out.push_back({std::string(kSizes[i].name) + ": the engine's queued bytes for one step equal its outputs' bytes",
                   rep.info[i].step_bytes == rep.info[i].step_bytes_measured});
  }
  return out;
}

void write_json(std::ostream& os, const Report& rep, const std::vector<Check>& chk, int ranks, bool uses_mpi,
                const Config& cfg, const std::string& command_line) {
  tide::examples::JsonWriter w(os);
  tide::examples::begin_benchmark(w, "bench_scaling", command_line);
  w.field("ranks", ranks).field("uses_mpi", uses_mpi).field("reps", cfg.reps).field("quick", cfg.quick);
  w.field("allocator", "tide's caching CPU allocator, limit " +
                           std::to_string(tide::cpu_cache_stats(0).limit_bytes >> 20) + " MiB per device");
  w.field("method",
          "each step: 7 elementwise f32 ops with new outputs, an out-of-place all-reduce (avg) of the gradient, "
          "and a loss scalar accumulated on the device, read once after the last step; lookahead k = "
          "SyncPolicy::steps(k) with rt->step() per step, sync = wait_to_read after every op, unbounded = "
          "SyncPolicy::unbounded(); median over reps per rank, then mean across ranks (peak bytes: max); "
          "peak queued bytes are sampled by the engine at step ends and every 32 pushes");
  w.key("sizes").begin_array();
  for (std::size_t i = 0; i < std::size(kSizes); ++i) {
    w.begin_object();
    w.field("name", kSizes[i].name).field("count", kSizes[i].count).field("tensor_bytes", kSizes[i].count * 4);
    w.field("step_bytes", rep.info[i].step_bytes).field("step_bytes_engine", rep.info[i].step_bytes_measured);
    w.end_object();
  }
  w.end_array();
  w.key("configs").begin_array();
  for (const Result& r : rep.results) {
    const std::size_t si = size_index(r.size);
    const double step_bytes = static_cast<double>(rep.info[si].step_bytes);
    const Result& sync = sync_of(rep.results, r.size);
    w.begin_object();
    w.field("size", r.size->name).field("lookahead", r.la->name).field("k", r.la->k).field("steps", r.steps);
    w.field("steps_per_s", r.steps / r.wall_s).field("s_per_step", r.wall_s / r.steps).field("wall_s", r.wall_s);
    w.field("frontend_stall_fraction", r.stall_frac).field("frontend_blocked_fraction", r.blocked_frac);
    w.field("backend_idle_fraction", r.idle_frac).field("comm_busy_fraction", r.comm_busy_frac);
    w.field("peak_queued_bytes", r.peak_bytes).field("peak_queued_steps", r.peak_bytes / step_bytes);
    w.field("blockers_per_step", r.blockers_per_step).field("minor_page_faults_per_step", r.faults_per_step);
    w.field("speedup_vs_sync", ms_per_step(sync) / ms_per_step(r));
    w.field("final_loss", r.loss);
    w.field("verdict", verdict(r, sync, rep.info[si], r.la->unbounded() ? &rep.growth[si] : nullptr));
    w.end_object();
  }
  w.end_array();
  w.key("unbounded_growth").begin_array();
  for (const Growth& g : rep.growth) {
    const double step_bytes = static_cast<double>(rep.info[size_index(g.size)].step_bytes);
    w.begin_object();
    w.field("size", g.size->name).field("steps_a", g.steps_a).field("steps_b", g.steps_b);
    w.field("peak_bytes_a", g.peak_a).field("peak_bytes_b", g.peak_b);
    w.field("peak_steps_a", g.peak_a / step_bytes).field("peak_steps_b", g.peak_b / step_bytes);
    w.field("growth", g.peak_b / g.peak_a).field("grows", g.grows());
    w.end_object();
  }
  w.end_array();
  w.key("cost_model").begin_array();
  for (const CostModel& m : rep.model) {
    w.begin_object();
    w.field("size", m.size->name).field("op", "y = x + 1 (new output)").field("n", m.n);
    w.field("t1_push_ns_sync", m.t1_sync_ns).field("t1_push_ns_async", m.t1_async_ns);
    w.field("t2_backend_ns_sync", m.t2_sync_ns).field("t2_backend_ns_async", m.t2_async_ns);
    w.field("t3_return_ns", m.t3_ns);
    w.field("sync_predicted_s", m.sync_model_s()).field("sync_measured_s", m.sync_s);
    w.field("sync_measured_over_predicted", m.sync_s / m.sync_model_s());
    w.field("async_predicted_s", m.async_model_s()).field("async_measured_s", m.async_s);
    w.field("async_measured_over_predicted", m.async_s / m.async_model_s());
    w.field("async_bound_s", m.async_bound_s()).field("async_measured_over_bound", m.async_s / m.async_bound_s());
    w.field("sync_handoff_ns_per_op", m.handoff_ns());
    w.end_object();
  }
  w.end_array();
  w.key("checks").begin_array();
  bool all = true;
  for (const Check& c : chk) {
    w.begin_object().field("what", c.what).field("pass", c.pass);
    if (c.quantity) {
      w.field("quantity", c.quantity).field("measured", c.measured).field("limit", c.limit);
      w.field("pass_if", c.rule);
    }
    w.end_object();
    all = all && c.pass;
  }
  w.end_array();
  w.field("target",
          "with lookahead k, peak queued bytes <= (k+1) x one step's bytes; unbounded: the peak grows with the "
          "number of steps (>= 1.5x when the steps double)");
  w.field("all_checks_pass", all);
  w.end_object();
}

// One line per configuration, whitespace-separated, for gnuplot.
void write_dat(std::ostream& os, const Report& rep, int ranks) {
  os << "# ranks size tensor_bytes mode_index mode steps steps_per_s ms_per_step stall_frac blocked_frac idle_frac "
        "peak_steps blockers_per_step speedup_vs_sync faults_per_step\n";
  char buf[512];
  for (const Result& r : rep.results) {
    const double step_bytes = static_cast<double>(rep.info[size_index(r.size)].step_bytes);
    std::snprintf(buf, sizeof buf, "%d %s %lld %d %s %d %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g\n", ranks,
                  r.size->name, static_cast<long long>(r.size->count * 4), lookahead_index(r.la), r.la->name,
                  r.steps, r.steps / r.wall_s, ms_per_step(r), r.stall_frac, r.blocked_frac, r.idle_frac,
                  r.peak_bytes / step_bytes, r.blockers_per_step,
                  ms_per_step(sync_of(rep.results, r.size)) / ms_per_step(r), r.faults_per_step);
    os << buf;
  }
}

// Every lookahead, plus unbounded at twice the steps (does the queue grow
// with the work pushed?), one run each per repetition, in turn: a slow spell
// on a shared machine then falls on every mode alike, not on one of them.
void measure_size(tide::Runtime& rt, const OpSize& size, int steps, int reps, Report& rep) {
  constexpr std::size_t kModes = std::size(kLookaheads);
  const Lookahead& unbounded = kLookaheads[kModes - 1];
  std::vector<std::vector<RunSample>> runs(kModes + 1);  // the last: unbounded at 2 x steps
  for (int r = 0; r <= reps; ++r) {  // r = 0 warms up: allocator, caches, MPI connections
    for (std::size_t m = 0; m <= kModes; ++m) {
      const Lookahead& la = m < kModes ? kLookaheads[m] : unbounded;
      const int n = m < kModes ? steps : 2 * steps;
      RunSample sample = run_steps(rt, size, la, r == 0 ? std::min(n, 8) : n);
      if (r > 0) runs[m].push_back(sample);
    }
  }
  bool same = true;
  for (std::size_t m = 0; m < kModes; ++m) {
    rep.results.push_back(summarize(rt, size, kLookaheads[m], steps, runs[m]));
    for (const RunSample& s : runs[m]) same = same && s.loss == runs[0].front().loss && std::isfinite(s.loss);
  }
  rep.loss_same.push_back(same);
  const Result twice = summarize(rt, size, unbounded, 2 * steps, runs[kModes]);
  rep.growth.push_back({&size, steps, 2 * steps, rep.results.back().peak_bytes, twice.peak_bytes});
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command_line = tide::examples::command_line(argc, argv);
  auto rt = tide::Runtime::init(argc, argv);
  const bool root = rt->rank() == 0;
  Config cfg;
  if (const int status = parse_args(argc, argv, cfg, root); status >= 0) return status;
  // Opened now, so a bad path fails before the measuring, on every rank at once.
  std::ofstream json_out, dat_out;
  if (root && !cfg.json_path.empty()) json_out.open(cfg.json_path);
  if (root && !cfg.dat_path.empty()) dat_out.open(cfg.dat_path);
  const bool cannot_write = (!cfg.json_path.empty() && root && !json_out) || (!cfg.dat_path.empty() && root && !dat_out);
  if (across_ranks(*rt, {cannot_write ? 1.0 : 0.0}, tide::ReduceOp::max)[0] > 0) {
    if (root) std::fprintf(stderr, "bench_scaling: cannot open the output files for writing\n");
    return 1;
  }
  if (root && !rt->world().uses_mpi()) std::printf("note: not started by mpirun; a world of one rank\n");

  int failed = 0;
  try {
    Report rep;
    for (const OpSize& size : kSizes) {
      const StepBytes b = step_bytes(*rt, size.count);
      rep.info.push_back({b.outputs, b.engine});
      measure_size(*rt, size, cfg.steps * size.steps_scale, cfg.reps, rep);
    }
    for (const OpSize& size : kSizes) {
      const int n = cfg.quick ? std::max(4, size.model_ops / 4) : size.model_ops;
      rep.model.push_back(measure_cost_model(*rt, size, n, cfg.reps));
    }
    rt->wait_all();

    if (root) {
      print_report(rep, rt->size(), cfg);
      const tide::CpuCacheStats cache = tide::cpu_cache_stats(0);
      std::printf("allocator: tide's caching CPU allocator, limit %llu MiB: %llu hits, %llu misses, peak in use %.1f MiB\n\n",
                  static_cast<unsigned long long>(cache.limit_bytes >> 20), static_cast<unsigned long long>(cache.hits),
                  static_cast<unsigned long long>(cache.misses), static_cast<double>(cache.peak_in_use_bytes) / (1 << 20));
      const std::vector<Check> chk = checks(rep);
      for (const Check& c : chk) {
        std::printf("check: %-6s %s\n", c.pass ? "OK" : "FAILED", c.what.c_str());
        failed += !c.pass;
      }
      std::printf("%s\n", failed ? "FAILED: some checks did not pass" : "OK: every check passed");
      if (json_out.is_open()) {
        write_json(json_out, rep, chk, rt->size(), rt->world().uses_mpi(), cfg, command_line);
        json_out.close();
        if (!json_out) throw tide::ValueError("writing " + cfg.json_path + " failed");
        std::printf("wrote %s\n", cfg.json_path.c_str());
      }
      if (dat_out.is_open()) {
        write_dat(dat_out, rep, rt->size());
        dat_out.close();
        if (!dat_out) throw tide::ValueError("writing " + cfg.dat_path + " failed");
        std::printf("wrote %s\n", cfg.dat_path.c_str());
      }
    }
  } catch (const tide::Error& e) {
    std::fprintf(stderr, "bench_scaling: %s\n", e.what());
    return 1;
  }
  return failed ? 3 : 0;
}
