// What the desync check costs per step. Two duplicates of the world, one
// with the check and one without, run the same loop in alternating rounds:
// a step of kBuckets all-reduces of kCount floats (a small data-parallel
// step, where a per-step cost shows most), with check_sync() at each step on
// the checked one (what Runtime::step() does). Reports medians over rounds:
//   - the frontend's cost of pushing one collective (the hash it now chains)
//   - the frontend's cost of check_sync() (post the check, push its op)
//   - the desync_check op's time on the comm stream (engine timeline)
//   - the wall time of a step, off and on
// Usage: mpirun -np 2 tide_comm_desync_cost [rounds] [steps per round]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <tide/tide.h>

namespace {

using clock_type = std::chrono::steady_clock;
constexpr int kBuckets = 4;
constexpr std::int64_t kCount = 1000;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

double ns_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count();
}

struct Round {
  double push_ns = 0;   // per collective push
  double check_ns = 0;  // per check_sync()
  double step_us = 0;   // wall time per step, queue drained
};

Round run(tide::Engine& e, tide::Communicator& comm, std::vector<tide::Tensor>& buckets, int steps, bool check) {
  Round r;
  double push_total = 0, check_total = 0;
  const auto t0 = clock_type::now();
  for (int s = 0; s < steps; ++s) {
    auto step = e.step();
    if (check) {
      const auto c0 = clock_type::now();
      comm.check_sync();
      check_total += ns_since(c0);
    }
    const auto p0 = clock_type::now();
    for (auto& b : buckets) comm.all_reduce_(b, tide::ReduceOp::avg);
    push_total += ns_since(p0);
  }
  e.wait_all();
  r.step_us = ns_since(t0) / 1000.0 / steps;
  r.push_ns = push_total / (static_cast<double>(steps) * kBuckets);
  r.check_ns = check ? check_total / steps : 0;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 400;
  if (rt->size() < 2 || rounds < 1 || steps < 1) {
    std::printf("usage: mpirun -np N %s [rounds] [steps per round] (N >= 2)\n", argv[0]);
    return 2;
  }
  // Made before anything runs on the comm thread (creating one calls MPI).
  tide::CommOptions on_options = tide::CommOptions::from_env(), off_options = on_options;
  on_options.desync_check = true;
  off_options.desync_check = false;
  auto on = tide::Communicator::mpi_world(on_options);
  auto off = tide::Communicator::mpi_world(off_options);
  tide::Engine& e = rt->engine();
  std::vector<tide::Tensor> buckets;
  for (int b = 0; b < kBuckets; ++b) buckets.push_back(tide::full({kCount}, 1.0));

  run(e, *off, buckets, steps / 4, false);  // warm-up
  run(e, *on, buckets, steps / 4, true);
  std::vector<double> push_off, push_on, check_ns, step_off, step_on, step_diff, op_us, all_reduce_us;
  for (int i = 0; i < rounds; ++i) {
    // Alternate which goes first, so that neither gains from the other's
    // warming of caches and of MPI's progress.
    Round a, b;
    if (i % 2) a = run(e, *off, buckets, steps, false);
    e.set_tracing(true);
    b = run(e, *on, buckets, steps, true);
    e.set_tracing(false);
    if (i % 2 == 0) a = run(e, *off, buckets, steps, false);
    for (const tide::TraceEvent& ev : e.take_trace()) {
      const double us = static_cast<double>(ev.end_ns - ev.start_ns) / 1000.0;
      if (std::string(ev.op) == "desync_check") op_us.push_back(us);
      if (std::string(ev.op) == "all_reduce") all_reduce_us.push_back(us);
    }
    push_off.push_back(a.push_ns);
    push_on.push_back(b.push_ns);
    check_ns.push_back(b.check_ns);
    step_off.push_back(a.step_us);
    step_on.push_back(b.step_us);
    step_diff.push_back(b.step_us - a.step_us);
  }
  on->finish_checks();  // none left in flight when the communicator goes
  e.wait_all();
  const bool ok = !on->broken() && !off->broken() && op_us.size() == static_cast<std::size_t>(rounds * steps);
  if (rt->rank() == 0) {
    const double so = median(step_off), sn = median(step_on);
    std::printf("desync check cost: %d ranks, %d rounds of %d steps, a step = %d all_reduce(%lld x f32)\n",
                rt->size(), rounds, steps, kBuckets, static_cast<long long>(kCount));
    std::printf("%-44s %10s %10s %10s\n", "", "off", "on", "on - off");
    std::printf("%-44s %10.0f %10.0f %10.0f\n", "frontend: push one all_reduce_ (ns)", median(push_off),
                median(push_on), median(push_on) - median(push_off));
    std::printf("%-44s %10s %10.0f %10.0f\n", "frontend: check_sync() per step (ns)", "-", median(check_ns),
                median(check_ns));
    std::printf("%-44s %10s %10.1f %10s\n", "comm stream: desync_check op, median (us)", "-", median(op_us), "");
    std::printf("%-44s %10s %10.1f %10s\n", "comm stream: desync_check op, p90 (us)", "-", percentile(op_us, 0.9),
                "");
    std::printf("%-44s %10s %10.1f %10s\n", "comm stream: one all_reduce op, median (us)", "-",
                median(all_reduce_us), "");
    const double d = median(step_diff);
    std::printf("%-44s %10.1f %10.1f %10.1f\n", "wall: one step, median of rounds (us)", so, sn, d);
    std::printf("verdict: %s: per step the check costs %.0f ns of frontend time and %.1f us on the comm stream; "
                "a step of this size changed by %+.1f us (%+.1f%%, median of paired rounds, noise included)\n",
                ok ? "OK" : "FAILED", median(check_ns) + kBuckets * (median(push_on) - median(push_off)),
                median(op_us), d, 100.0 * d / so);
  }
  std::fflush(stdout);
  return ok ? 0 : 1;
}
