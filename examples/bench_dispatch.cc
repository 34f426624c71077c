// bench_dispatch: what one op costs the frontend (push), and how many tiny
// ops per second the backend runs, for the async engine with the naive
// (synchronous) engine as the baseline in the same run.
//
//   bench_dispatch [--runs N] [--batch N] [--ops N] [--trace] [--json FILE]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <latch>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <tide/tide.h>

#include "common/cli.h"
#include "common/json_writer.h"
#include "common/machine.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kTargetPushNs = 300;       // the project's push-cost target (--target-push-ns)
constexpr double kPytorchDispatchNs = 1000;  // PyTorch's C++ dispatch, roughly, for context
constexpr int kThroughputRuns = 7;

struct Config {
  int runs = 31;
  int batch = 2000;
  int ops = 100000;
  bool trace = false;  // both engines record the timeline, as TIDE_TRACE makes them
  std::string json_path;
  bool check = false;  // --check: exit 3 when the target is missed
  double target_push_ns = kTargetPushNs;
};

struct Summary {
  double median = 0, p10 = 0, p90 = 0;
};

// Percentiles by linear interpolation between the nearest ranks.
Summary summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    double pos = q * static_cast<double>(v.size() - 1);
    auto lo = static_cast<std::size_t>(pos);
    std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  return {at(0.5), at(0.1), at(0.9)};
}

double ns_between(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::nano>(t1 - t0).count();
}

constexpr tide::Device kDev = tide::cpu(0);
constexpr int kCompute = static_cast<int>(tide::StreamKind::compute);
constexpr int kCopy = static_cast<int>(tide::StreamKind::copy);

void noop_kernel(const tide::OpContext&) {}

// An op on cpu:0. (Not designated initializers: GCC 12 flags the fields they
// leave out under -Wmissing-field-initializers.)
tide::OpDesc make_op(const char* name, int stream, tide::KernelFn fn, tide::StorageList reads = {},
                     tide::StorageList writes = {}) {
  tide::OpDesc op;
  op.name = name;
  op.device = kDev;
  op.stream = stream;
  op.fn = std::move(fn);
  op.reads = std::move(reads);
  op.writes = std::move(writes);
  return op;
}

// One engine with the storages and tensors the measurements use.
struct Subject {
  Subject(tide::EngineKind kind, bool trace) {
    tide::EngineOptions o;
    o.kind = kind;
    engine = tide::Engine::create(o);
    tide::EngineScope scope(*engine);
    engine->set_tracing(trace);
    x = engine->allocate(kDev, 64);
    y = engine->allocate(kDev, 64);
    z = engine->allocate(kDev, 64);
    a = tide::ones({1, 2});
    b = tide::ones({1, 2});
    engine->wait_all();
  }
  bool async() const { return engine->kind() == tide::EngineKind::async; }

  std::unique_ptr<tide::Engine> engine;
  std::shared_ptr<tide::Storage> x, y, z;
  tide::Tensor a, b;
};

enum class PushCase { cross_stream, same_stream, tensor_add };

struct BatchResult {
  double ns_per_op;
  double cross_waits_per_op;
};

// Times `batch` pushes of one kind. Timing method: on the async engine the
// compute worker (and, for the cross-stream case, the copy worker) is first
// parked on a std::latch op, so the timed loop measures only the frontend:
// with 2 cores a running worker would otherwise compete with the pusher for
// a core and for the cache lines of the queue and counters. The latch also
// keeps the cross-stream producer unfinished, so every timed op really needs
// an event wait (an op whose producer already completed gets none). After the
// clock stops the latch is released and the queue drained, untimed.
// The timed loop includes building each OpDesc: every caller of push pays it.
BatchResult push_batch(Subject& s, PushCase what, int batch) {
  tide::Engine& e = *s.engine;
  std::latch release(1);
  std::atomic<int> parked{0};
  auto held = [&release, &parked](const tide::OpContext&) {
    parked.fetch_add(1);
    release.wait();
  };
  const bool hold = s.async();  // the naive engine runs ops inline: it cannot be held
  int nheld = 0;
  if (hold) {
    e.push(make_op("hold", kCompute, held));
    ++nheld;
  }
  if (what != PushCase::tensor_add) {
    // The timed ops read x and y and write z on the compute stream; x was
    // last written on the copy stream (cross_stream) or the compute stream.
    const bool cross = what == PushCase::cross_stream;
    if (cross && hold) {
      e.push(make_op("produce_x", kCopy, held, {}, {s.x}));
      ++nheld;
    } else {
      e.push(make_op("produce_x", cross ? kCopy : kCompute, noop_kernel, {}, {s.x}));
    }
    e.push(make_op("produce_y", kCompute, noop_kernel, {}, {s.y}));
  }
  // Start the clock only once the held workers are parked and have had time
  // to go to sleep, so their wake-up does not land inside the timed loop.
  while (parked.load() < nheld) std::this_thread::yield();
  if (nheld) std::this_thread::sleep_for(std::chrono::microseconds(200));

  const std::uint64_t waits_before = e.stats().cross_stream_waits;
  Clock::time_point t0, t1;
  try {
    t0 = Clock::now();
    if (what == PushCase::tensor_add) {
      for (int i = 0; i < batch; ++i) tide::Tensor c = tide::add(s.a, s.b);
    } else {
      for (int i = 0; i < batch; ++i) e.push(make_op("op2r1w", kCompute, noop_kernel, {s.x, s.y}, {s.z}));
    }
    t1 = Clock::now();
  } catch (...) {
    // The held ops use `release`: let them finish before it goes away.
    release.count_down();
    try {
      e.wait_all();
    } catch (...) {
    }
    throw;
  }
  const std::uint64_t waits = e.stats().cross_stream_waits - waits_before;

  release.count_down();
  e.wait_all();
  return {ns_between(t0, t1) / batch, static_cast<double>(waits) / batch};
}

struct PushResult {
  Summary ns;
  double cross_waits_per_op = 0;  // from the last run
};

PushResult measure_push(Subject& s, PushCase what, const Config& cfg) {
  tide::EngineScope scope(*s.engine);
  for (int i = 0; i < 3; ++i) push_batch(s, what, cfg.batch);  // warm-up: allocator, caches
  std::vector<double> ns;
  PushResult r;
  for (int run = 0; run < cfg.runs; ++run) {
    BatchResult b = push_batch(s, what, cfg.batch);
    ns.push_back(b.ns_per_op);
    r.cross_waits_per_op = b.cross_waits_per_op;
  }
  r.ns = summarize(std::move(ns));
  return r;
}

// Backend throughput: push `ops` tiny ops and time until wait_all returns.
// Here the workers run freely, concurrently with the pushes.
Summary measure_throughput(Subject& s, bool tensor_add, const Config& cfg) {
  tide::EngineScope scope(*s.engine);
  tide::Engine& e = *s.engine;
  std::vector<double> ops_per_s;
  for (int run = 0; run <= kThroughputRuns; ++run) {  // run 0 is a warm-up
    e.wait_all();
    const auto t0 = Clock::now();
    if (tensor_add) {
      for (int i = 0; i < cfg.ops; ++i) tide::Tensor c = tide::add(s.a, s.b);
    } else {
      for (int i = 0; i < cfg.ops; ++i) e.push(make_op("op2r1w", kCompute, noop_kernel, {s.x, s.y}, {s.z}));
    }
    e.wait_all();
    const double ns = ns_between(t0, Clock::now());
    if (run > 0) ops_per_s.push_back(cfg.ops / (ns * 1e-9));
  }
  return summarize(std::move(ops_per_s));
}

struct Row {
  const char* name;
  const char* unit;  // "ns/op" or "ops/s"
  Summary async, naive;
  double cross_waits_per_op = 0;  // async engine; push rows only
};

void write_json(std::ostream& out, const Config& cfg, const std::string& command_line,
                const std::vector<Row>& rows, bool target_met) {
  tide::examples::JsonWriter w(out);
  auto summary = [&w](const char* key, const Summary& s) {
    w.key(key).begin_object();
    w.field("median", s.median).field("p10", s.p10).field("p90", s.p90);
    w.end_object();
  };
  w.begin_object();
  w.field("benchmark", "bench_dispatch");
  tide::examples::write_machine(w);
  w.field("method",
          "push: per-op time of a batch of pushes (OpDesc construction included), async workers "
          "parked on a latch op while timing; throughput: pushes until wait_all returns");
  w.field("command_line", command_line);
  w.field("push_runs", cfg.runs).field("push_batch", cfg.batch);
  w.field("throughput_runs", kThroughputRuns).field("throughput_ops", cfg.ops).field("tracing", cfg.trace);
  w.key("measurements").begin_array();
  for (const Row& r : rows) {
    w.begin_object();
    w.field("name", r.name).field("unit", r.unit);
    summary("async", r.async);
    summary("naive", r.naive);
    w.field("async_over_naive", r.async.median / r.naive.median);
    if (std::string_view(r.unit) == "ns/op") w.field("async_cross_stream_waits_per_op", r.cross_waits_per_op);
    w.end_object();
  }
  w.end_array();
  w.key("target").begin_object();
  w.field("what", "async push cost median, cross-stream op (2 reads, 1 write)");
  w.field("push_ns_max", cfg.target_push_ns);
  w.field("push_ns", rows[0].async.median);
  w.field("met", target_met);
  w.field("pytorch_dispatch_ns_context", kPytorchDispatchNs);
  w.end_object();
  w.end_object();
}

/// Reads the command line into `cfg`. Returns -1 when the program goes on,
/// else the status to end it with (0 after --help, 2 after a bad argument).
int parse_args(int argc, char** argv, Config& cfg) {
  CLI::App app{"What one op costs the frontend (push), and how many tiny ops per second the backend runs:\n"
               "the async engine against the naive (synchronous) one, in the same run."};
  app.option_defaults()->always_capture_default();
  const auto count = CLI::Range(1, 100'000'000);
  app.add_option("--runs", cfg.runs, "timed push batches per measurement")->check(count);
  app.add_option("--batch", cfg.batch, "pushes per batch")->check(count);
  app.add_option("--ops", cfg.ops, "ops per backend-throughput run")->check(count);
  app.add_flag("--trace", cfg.trace, "both engines record the timeline (as TIDE_TRACE does): what tracing costs");
  app.add_option("--json", cfg.json_path, "also write every number as JSON to this file")
      ->check(tide::examples::file_name());
  tide::examples::add_check_flag(app, cfg.check);
  app.add_option("--target-push-ns", cfg.target_push_ns, "the push cost the verdict holds the async engine to")
      ->check(tide::examples::number_above(0, false));
  return tide::examples::parse_command_line(app, argc, argv);
}

void print_row(const Row& r) {
  const bool per_s = std::string_view(r.unit) == "ops/s";
  const double scale = per_s ? 1e-6 : 1;  // throughput is printed in millions
  std::printf("%-38s %-7s %9.1f %9.1f-%-9.1f %9.1f %9.1f-%-9.1f %9.2fx\n", r.name,
              per_s ? "Mops/s" : "ns/op", r.async.median * scale, r.async.p10 * scale,
              r.async.p90 * scale, r.naive.median * scale, r.naive.p10 * scale, r.naive.p90 * scale,
              r.async.median / r.naive.median);
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  if (const int status = parse_args(argc, argv, cfg); status >= 0) return status;
  const std::string command_line = tide::examples::command_line(argc, argv);


  std::ofstream json_out;  // opened now, so a bad path fails before the measuring
  if (!cfg.json_path.empty()) {
    json_out.open(cfg.json_path);
    if (!json_out) {
      std::fprintf(stderr, "bench_dispatch: cannot open %s for writing\n", cfg.json_path.c_str());
      return 1;
    }
  }

  bool met = false;
  try {
    Subject async(tide::EngineKind::async, cfg.trace);
    Subject naive(tide::EngineKind::naive, cfg.trace);

    std::vector<Row> rows;
    auto push_row = [&](const char* name, PushCase what) {
      PushResult ra = measure_push(async, what, cfg);
      PushResult rn = measure_push(naive, what, cfg);
      rows.push_back({name, "ns/op", ra.ns, rn.ns, ra.cross_waits_per_op});
    };
    auto throughput_row = [&](const char* name, bool tensor_add) {
      rows.push_back({name, "ops/s", measure_throughput(async, tensor_add, cfg),
                      measure_throughput(naive, tensor_add, cfg)});
    };
    push_row("push: 2R/1W op, cross-stream read", PushCase::cross_stream);
    push_row("push: 2R/1W op, same stream", PushCase::same_stream);
    push_row("push: tide::add, 1x2 f32", PushCase::tensor_add);
    throughput_row("throughput: trivial 2R/1W ops", false);
    throughput_row("throughput: tide::add, 1x2 f32", true);

    std::printf("tide bench_dispatch on %s (%u hardware threads)\n", tide::examples::hostname().c_str(),
                std::thread::hardware_concurrency());
    std::printf("push: median over %d runs of %d pushes; throughput: median over %d runs of %d ops\n\n",
                cfg.runs, cfg.batch, kThroughputRuns, cfg.ops);
    std::printf("%-38s %-7s %9s %-19s %9s %-19s %11s\n", "measurement", "unit", "async", "  (p10-p90)",
                "naive", "  (p10-p90)", "async/naive");
    for (const Row& r : rows) print_row(r);
    std::printf("\nasync cross-stream event waits per op: %.2f (cross-stream case), %.2f (same stream)\n",
                rows[0].cross_waits_per_op, rows[1].cross_waits_per_op);

    const double push_ns = rows[0].async.median;
    met = push_ns < cfg.target_push_ns;
    std::printf("verdict: async push cost median %.0f ns/op (2R/1W op, cross-stream read) vs target "
                "< %.0f ns: %s; PyTorch's C++ dispatch is ~1 us/op, %.1fx this\n",
                push_ns, cfg.target_push_ns, met ? "met" : "MISSED", kPytorchDispatchNs / push_ns);

    if (json_out.is_open()) {
      write_json(json_out, cfg, command_line, rows, met);
      json_out.close();
      if (!json_out) throw std::runtime_error("writing " + cfg.json_path + " failed");
      std::printf("wrote %s\n", cfg.json_path.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_dispatch: %s\n", e.what());
    return 1;
  }
  return cfg.check && !met ? tide::examples::kTargetMissed : 0;
}
