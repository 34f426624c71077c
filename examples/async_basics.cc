// The experiments of the "Asynchronous Computation" chapter of Dive into Deep
// Learning, run on tide: the frontend returns while the backend computes,
// barriers and implicit blockers, and sync vs async increments with the
// chapter's cost model checked against measurement.
//
//   async_basics [--device cpu:0] [--repeats 5] [--increments 10000]
//                [--size 1000] [--json FILE]
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <tide/tide.h>

#include "common/cli.h"
#include "common/json_writer.h"
#include "common/machine.h"
#include "common/timing.h"

namespace {

using tide::examples::at_least;
using tide::examples::median;
using tide::examples::median_seconds;
using tide::examples::now_ns;

struct Options {
  tide::Device device = tide::cpu(0);
  int repeats = 5;
  int increments = 10000;
  int size = 1000;
  std::string json;
  bool check = false;  // --check: exit 3 when a target is missed
};

/// Reads the command line into `o`. Returns -1 when the program goes on,
/// else the status to end it with (0 after --help, 2 after a bad argument).
int parse(int argc, char** argv, Options& o) {
  CLI::App app{"Reproduces the experiments of the 'Asynchronous Computation' chapter on tide.\n"
               "TIDE_ENGINE=naive runs them on the synchronous engine for contrast."};
  app.option_defaults()->always_capture_default();
  std::string device = o.device.str();
  app.add_option("--device", device, "where the experiments run: cpu:N or cuda:N")
      ->check(tide::examples::device_name());
  app.add_option("--repeats", o.repeats, "runs of each measurement (the median is reported)")
      ->check(at_least(1));
  app.add_option("--increments", o.increments, "tiny ops in the sync vs async experiment")->check(at_least(1));
  app.add_option("--size", o.size, "rows and columns of the matmul experiment")->check(at_least(1));
  app.add_option("--json", o.json, "also write every number as JSON to this file");
  tide::examples::add_check_flag(app, o.check);
  const int status = tide::examples::parse_command_line(app, argc, argv);
  if (status < 0) o.device = tide::Device::parse(device);
  return status;
}

void heading(const char* title) { std::printf("\n== %s\n", title); }
void row(const char* what, double seconds) { std::printf("  %-44s %10.3f ms\n", what, seconds * 1e3); }

// (1) numpy-style host-synchronous work vs tide returning vs tide finished.
struct MatmulResult {
  double host_sync_s, tide_return_s, tide_done_s;
};

MatmulResult matmul_experiment(const Options& o) {
  const int n = o.size;
  tide::TensorOptions on{tide::DType::f32, o.device};
  {  // warm-up: first-touch allocation and OpenBLAS thread start
    tide::Tensor a = tide::randn({n, n}, on);
    tide::Tensor b = tide::matmul(a, a);
    tide::wait_all();
  }
  std::mt19937 gen(0);
  std::normal_distribution<float> normal;
  std::vector<float> ha(static_cast<std::size_t>(n) * n), hb(ha.size());
  double host = median_seconds(o.repeats, [&] {
    for (int i = 0; i < 10; ++i) {
      for (auto& v : ha) v = normal(gen);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, ha.data(), n, ha.data(), n,
                  0.0f, hb.data(), n);
    }
  });
  std::vector<std::int64_t> ret, done;
  for (int r = 0; r < o.repeats; ++r) {
    std::int64_t t0 = now_ns();
    for (int i = 0; i < 10; ++i) {
      tide::Tensor a = tide::randn({n, n}, on);
      tide::Tensor b = tide::matmul(a, a);
    }
    std::int64_t t1 = now_ns();
    tide::wait_all();
    ret.push_back(t1 - t0);
    done.push_back(now_ns() - t0);
  }
  return {host, median(ret) * 1e-9, median(done) * 1e-9};
}

// (3) wait_all vs wait_to_read, with and without unrelated work queued.
struct BarrierResult {
  double wait_all_s, wait_to_read_s, wait_all_busy_s, wait_to_read_busy_s;
};

BarrierResult barrier_experiment(const Options& o) {
  const int n = o.size;
  tide::TensorOptions on{tide::DType::f32, o.device};
  tide::Tensor a = tide::randn({n, n}, on);
  tide::wait_all();
  auto timed = [&](bool all) {
    return median_seconds(o.repeats, [&] {
      tide::Tensor b = tide::matmul(a, a);
      if (all) {
        tide::wait_all();
      } else {
        b.wait_to_read();
      }
    });
  };
  BarrierResult r{};
  r.wait_all_s = timed(true);
  r.wait_to_read_s = timed(false);
  // With unrelated work queued on the copy stream: time until the barrier
  // returns for a small b on the compute stream.
  auto until_barrier = [&](bool all) {
    std::vector<std::int64_t> t;
    for (int i = 0; i < o.repeats; ++i) {
      tide::Tensor other;
      {
        tide::StreamScope s(tide::StreamKind::copy);
        other = tide::matmul(a, a);
        other = tide::matmul(other, a);
      }
      std::int64_t t0 = now_ns();
      tide::Tensor b = tide::exp(tide::ones({2, 2}, on));
      if (all) {
        tide::wait_all();
      } else {
        b.wait_to_read();
      }
      t.push_back(now_ns() - t0);
      tide::wait_all();
    }
    return median(t) * 1e-9;
  };
  r.wait_all_busy_s = until_barrier(true);
  r.wait_to_read_busy_s = until_barrier(false);
  return r;
}

// (5) y = x + 1, N times: synchronous (a barrier after each) vs asynchronous.
struct IncrementResult {
  double sync_s, async_s;
  std::vector<double> sync_runs_s, async_runs_s;
  // CPU devices: the same loops with every op handed to the worker
  // (SyncPolicy::inline_op_bytes = 0), the path the chapter's model describes.
  double handoff_sync_s = 0, handoff_async_s = 0;
  std::vector<double> handoff_sync_runs_s, handoff_async_runs_s;
  double t1_ns, t2_ns, t3_ns, t2_busy_ns, async_push_ns;
};

// y = x + 1 as a raw engine op that also stamps when its kernel ran, to split
// one round trip into t1 (push), t2 (backend picks up and computes) and t3
// (the result reaches the frontend).
struct Stamp {
  std::int64_t start_ns = 0, end_ns = 0;
};

void push_stamped_increment(const tide::Tensor& x, tide::Tensor& y, Stamp* stamp) {
  y = tide::Tensor::empty(x.shape(), x.dtype(), x.device());
  tide::OpDesc op;
  op.name = "add_stamped";
  op.device = x.device();
  op.reads.add(x.storage());
  op.writes.add(y.storage());
  const std::int64_t n = x.numel();
  op.fn = [n, stamp](const tide::OpContext& c) {
    stamp->start_ns = now_ns();
    const float* in = c.in<float>(0);
    float* out = c.out<float>(0);
    for (std::int64_t i = 0; i < n; ++i) out[i] = in[i] + 1.0f;
    stamp->end_ns = now_ns();
  };
  tide::current_engine().push(std::move(op));
}

IncrementResult increment_experiment(const Options& o) {
  const int n = o.increments;
  tide::Tensor x = tide::ones({1, 2}, {tide::DType::f32, o.device});
  tide::wait_all();
  IncrementResult r{};
  auto sync_loop = [&] {
    for (int i = 0; i < n; ++i) {
      tide::Tensor y = x + 1;
      y.wait_to_read();
    }
  };
  auto async_loop = [&] {
    for (int i = 0; i < n; ++i) tide::Tensor y = x + 1;
    tide::wait_all();
  };
  r.sync_runs_s = tide::examples::run_seconds(o.repeats, sync_loop);
  r.async_runs_s = tide::examples::run_seconds(o.repeats, async_loop);
  r.sync_s = median(r.sync_runs_s);
  r.async_s = median(r.async_runs_s);
  // The t1/t2/t3 split stamps a host loop inside the op: on a GPU the op
  // only launches a kernel, so the split is measured on CPU devices only.
  if (o.device.is_cuda()) return r;

  tide::Engine& engine = tide::current_engine();
  const tide::SyncPolicy policy = engine.policy();
  tide::SyncPolicy handoff = policy;
  handoff.inline_op_bytes = 0;
  engine.set_policy(handoff);
  r.handoff_sync_runs_s = tide::examples::run_seconds(o.repeats, sync_loop);
  r.handoff_async_runs_s = tide::examples::run_seconds(o.repeats, async_loop);
  engine.set_policy(policy);
  r.handoff_sync_s = median(r.handoff_sync_runs_s);
  r.handoff_async_s = median(r.handoff_async_runs_s);

  std::vector<Stamp> stamps(static_cast<std::size_t>(n));
  std::vector<std::int64_t> t1, t2, t3;
  tide::Tensor y;
  for (int i = 0; i < n; ++i) {
    Stamp* s = &stamps[static_cast<std::size_t>(i)];
    std::int64_t a = now_ns();
    push_stamped_increment(x, y, s);
    std::int64_t b = now_ns();
    y.wait_to_read();
    std::int64_t c = now_ns();
    t1.push_back(b - a);
    t2.push_back(std::max<std::int64_t>(0, s->end_ns - b));
    t3.push_back(c - s->end_ns);
  }
  r.t1_ns = median(t1);
  r.t2_ns = median(t2);
  r.t3_ns = median(t3);

  std::int64_t p0 = now_ns();
  for (int i = 0; i < n; ++i) push_stamped_increment(x, y, &stamps[static_cast<std::size_t>(i)]);
  r.async_push_ns = static_cast<double>(now_ns() - p0) / n;
  tide::wait_all();
  std::vector<std::int64_t> gaps;  // time per op while the worker is busy
  for (int i = 1; i < n; ++i)
    gaps.push_back(stamps[static_cast<std::size_t>(i)].end_ns - stamps[static_cast<std::size_t>(i - 1)].end_ns);
  r.t2_busy_ns = median(gaps);
  return r;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string command_line = tide::examples::command_line(argc, argv);
  auto runtime = tide::Runtime::init(argc, argv);
  Options o;
  if (const int status = parse(argc, argv, o); status >= 0) return status;
  runtime->engine().check_device(o.device);
  std::printf("tide async_basics: %s engine on %s, median of %d runs\n",
              tide::engine_kind_name(runtime->engine().kind()), o.device.str().c_str(), o.repeats);

  heading("1. 10 x (randn + matmul)");
  std::printf("  %d x %d f32; host-synchronous OpenBLAS vs tide\n", o.size, o.size);
  MatmulResult m = matmul_experiment(o);
  row("host-synchronous (std::normal + cblas_sgemm)", m.host_sync_s);
  row("tide, time until the loop returns", m.tide_return_s);
  row("tide, time until wait_all() returns", m.tide_done_s);
  std::printf("  -> the frontend got control back after %.1f%% of the work's time\n",
              100.0 * m.tide_return_s / m.tide_done_s);

  heading("2. z = x * y + 2, and when it blocks");
  tide::Tensor x = tide::ones({1, 2}, {tide::DType::f32, o.device});
  tide::Tensor y = tide::ones({1, 2}, {tide::DType::f32, o.device});
  std::uint64_t blockers_before = runtime->stats().blockers;
  // The first round also pays for the first use of its kernels (on a GPU
  // each kernel is loaded into the context at its first launch), which the
  // print waits for: it is shown apart from the median of the next rounds.
  std::string shown;
  auto round = [&](std::int64_t& push_ns, std::int64_t& print_ns) {
    std::int64_t t0 = now_ns();
    tide::Tensor z = x * y + 2;
    push_ns = now_ns() - t0;
    t0 = now_ns();
    std::ostringstream printed;
    printed << z;  // an implicit blocker: printing needs the values
    print_ns = now_ns() - t0;
    shown = printed.str();
  };
  std::int64_t first_push = 0, first_print = 0;
  round(first_push, first_print);
  std::vector<std::int64_t> pushes, prints;
  for (int r = 0; r < o.repeats; ++r) {
    std::int64_t push_ns = 0, print_ns = 0;
    round(push_ns, print_ns);
    pushes.push_back(push_ns);
    prints.push_back(print_ns);
  }
  const double t_push = median(pushes), t_print = median(prints);
  std::printf("  %s\n  pushing z took %.1f us; printing it (a blocker) took %.1f us; blockers per print: %.0f\n"
              "  (the first round: %.1f us and %.1f us, with what a first use sets up: on a GPU, loading the kernels)\n",
              shown.c_str(), t_push * 1e-3, t_print * 1e-3,
              static_cast<double>(runtime->stats().blockers - blockers_before) / (o.repeats + 1), first_push * 1e-3,
              first_print * 1e-3);

  heading("3. barriers: wait_all vs wait_to_read");
  BarrierResult b = barrier_experiment(o);
  row("b = matmul(a, a); wait_all()", b.wait_all_s);
  row("b = matmul(a, a); b.wait_to_read()", b.wait_to_read_s);
  row("small b, 2 matmuls queued elsewhere: wait_all", b.wait_all_busy_s);
  row("small b, 2 matmuls queued elsewhere: wait_to_read", b.wait_to_read_busy_s);
  std::printf("  -> alone they cost the same; with unrelated work queued, wait_to_read waits only for b\n");

  heading("4. implicit blockers");
  tide::Tensor a = tide::randn({o.size, o.size}, {tide::DType::f32, o.device});
  tide::wait_all();
  double to_vector_s = median_seconds(o.repeats, [&] { (void)tide::matmul(a, a).to_vector<float>(); });
  double item_s = median_seconds(o.repeats, [&] { (void)tide::sum(tide::matmul(a, a)).item<float>(); });
  row("matmul(a, a).to_vector<float>()", to_vector_s);
  row("sum(matmul(a, a)).item<float>()", item_s);

  heading("5. y = x + 1, synchronous vs asynchronous");
  IncrementResult inc = increment_experiment(o);
  const double n = o.increments;
  std::printf("  %d increments of a 1x2 tensor\n", o.increments);
  auto row_spread = [](const char* what, double median_s, const std::vector<double>& runs) {
    auto [lo, hi] = std::minmax_element(runs.begin(), runs.end());
    std::printf("  %-44s %10.3f ms  (runs %.3f to %.3f)\n", what, median_s * 1e3, *lo * 1e3, *hi * 1e3);
  };
  row_spread("synchronous (wait_to_read after each)", inc.sync_s, inc.sync_runs_s);
  row_spread("asynchronous (one wait_all at the end)", inc.async_s, inc.async_runs_s);
  if (o.device.is_cpu()) {
    std::printf("  (on a CPU these tiny ops run at once on the frontend thread: their stream is\n"
                "  idle, and handing them to the worker costs more than they do; the same loops\n"
                "  with every op handed to the worker, SyncPolicy::inline_op_bytes = 0:)\n");
    row_spread("  handed over: synchronous", inc.handoff_sync_s, inc.handoff_sync_runs_s);
    row_spread("  handed over: asynchronous", inc.handoff_async_s, inc.handoff_async_runs_s);
  }
  std::printf("  (a synchronous hand-over is fast while both threads can spin on a core of\n"
              "  their own, and costs a sleep and a wake-up, tens of us, when they cannot)\n");
  // The chapter's cost model, from the measured t1/t2/t3 (CPU devices only).
  const double sync_model = n * (inc.t1_ns + inc.t2_ns + inc.t3_ns) * 1e-9;
  const double async_model = (inc.t1_ns + n * inc.t2_busy_ns + inc.t3_ns) * 1e-9;
  const double async_bound = (std::max(n * inc.async_push_ns, n * inc.t2_busy_ns) + inc.t3_ns) * 1e-9;
  if (o.device.is_cpu()) {
    std::printf("  measured per op: t1 push %.0f ns, t2 backend %.0f ns, t3 return %.0f ns;\n"
                "  backend per op while busy %.0f ns, push per op while running ahead %.0f ns\n",
                inc.t1_ns, inc.t2_ns, inc.t3_ns, inc.t2_busy_ns, inc.async_push_ns);
    std::printf("  model  sync  ~ N(t1+t2+t3)     = %8.3f ms   measured handed over %8.3f ms\n", sync_model * 1e3,
                inc.handoff_sync_s * 1e3);
    std::printf("  model  async ~ t1 + N t2 + t3  = %8.3f ms   measured handed over %8.3f ms\n", async_model * 1e3,
                inc.handoff_async_s * 1e3);
    if (inc.async_push_ns > inc.t2_busy_ns)
      std::printf("  the chapter assumes N t2 > (N-1) t1; here pushing is the slower side, so async is\n"
                  "  bounded by the frontend instead: max(N t1, N t2) + t3 = %.3f ms\n",
                  async_bound * 1e3);
  }
  double speedup = inc.sync_s / inc.async_s;
  std::printf("\nverdict: async is %.1fx faster than sync for %d tiny ops (target >= 5x: %s); the matmul\n"
              "loop returned %.0fx sooner than its work finished.\n",
              speedup, o.increments, speedup >= 5 ? "met" : "MISSED", m.tide_done_s / m.tide_return_s);

  if (!o.json.empty()) {
    std::ofstream f = tide::examples::open_json(o.json);
    tide::examples::JsonWriter j(f);
    tide::examples::begin_benchmark(j, "async_basics", command_line);
    j.key("engine").value(tide::engine_kind_name(runtime->engine().kind()));
    j.key("device").value(o.device.str());
    j.key("repeats").value(o.repeats);
    j.key("matmul").begin_object();
    j.key("size").value(o.size);
    j.key("host_sync_s").value(m.host_sync_s);
    j.key("tide_return_s").value(m.tide_return_s);
    j.key("tide_done_s").value(m.tide_done_s);
    j.end_object();
    j.key("z_push_us").value(t_push * 1e-3);
    j.key("z_print_us").value(t_print * 1e-3);
    j.key("z_push_first_us").value(first_push * 1e-3);
    j.key("z_print_first_us").value(first_print * 1e-3);
    j.key("barriers").begin_object();
    j.key("wait_all_s").value(b.wait_all_s);
    j.key("wait_to_read_s").value(b.wait_to_read_s);
    j.key("wait_all_with_unrelated_work_s").value(b.wait_all_busy_s);
    j.key("wait_to_read_with_unrelated_work_s").value(b.wait_to_read_busy_s);
    j.end_object();
    j.key("blockers").begin_object();
    j.key("to_vector_s").value(to_vector_s);
    j.key("item_s").value(item_s);
    j.end_object();
    j.key("increments").begin_object();
    j.key("count").value(o.increments);
    j.key("sync_s").value(inc.sync_s);
    j.key("async_s").value(inc.async_s);
    j.key("sync_runs_s").begin_array();
    for (double v : inc.sync_runs_s) j.value(v);
    j.end_array();
    j.key("async_runs_s").begin_array();
    for (double v : inc.async_runs_s) j.value(v);
    j.end_array();
    j.key("speedup").value(speedup);
    j.key("handoff_sync_s").value(inc.handoff_sync_s);
    j.key("handoff_async_s").value(inc.handoff_async_s);
    j.key("t1_ns").value(inc.t1_ns);
    j.key("t2_ns").value(inc.t2_ns);
    j.key("t3_ns").value(inc.t3_ns);
    j.key("t2_busy_ns").value(inc.t2_busy_ns);
    j.key("async_push_ns").value(inc.async_push_ns);
    j.key("sync_model_s").value(sync_model);
    j.key("async_model_s").value(async_model);
    j.end_object();
    j.end_object();
    f << "\n";
    std::printf("wrote %s\n", o.json.c_str());
  }
  return o.check && speedup < 5 ? tide::examples::kTargetMissed : 0;
} catch (const tide::Error& e) {
  std::fprintf(stderr, "async_basics: %s\n", e.what());
  return 2;
}
