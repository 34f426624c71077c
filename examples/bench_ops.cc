// bench_ops: what an elementwise op costs end to end, the chapter's
// `y = x + 1` in a loop, at several sizes: the async engine against the
// naive (synchronous) one in the same run. Each op makes a new output, as
// `y = x + 1` does in an eager framework, so the loop exercises the
// allocator and, on the async engine, the sync policy's bound on queued
// bytes. Engines alternate run by run; the table gives medians over the
// runs of the time per op (the loop plus the final wait) and of the minor
// page faults per op. Then the chapter's random matrices: 10 x randn of
// size x size and 10 x (randn + matmul), each to the end of the work.
//
//   bench_ops [--sizes 2,1000,100000] [--ops 10000] [--runs 11]
//             [--matmul-size 1000] [--json FILE]
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
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
using tide::examples::now_ns;

struct Options {
  std::vector<std::int64_t> sizes{2, 1000, 100000};
  int ops = 10000;
  int runs = 11;
  double streaming_cap_mb = -1;  // < 0: the engine's default
  std::int64_t max_queued_ops = -1;  // < 0: the engine's default
  double host_cap_mb = -1;       // < 0: the engine's default
  int matmul_size = 1000;        // 0: skip the random-matrix rows
  std::string json;
};

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

struct Sample {
  double us_per_op, faults_per_op;
};

/// One run: `ops` times y = x + 1 on `engine`, then a wait for all of it.
Sample run_once(tide::Engine& engine, std::int64_t n, int ops) {
  tide::EngineScope scope(engine);
  tide::Tensor x = tide::ones({n});
  tide::Tensor y;
  engine.wait_all();
  const long f0 = minor_faults();
  const std::int64_t t0 = now_ns();
  for (int i = 0; i < ops; ++i) y = x + 1.0;
  engine.wait_all();
  const std::int64_t t1 = now_ns();
  const long f1 = minor_faults();
  const std::vector<float> v = y.to_vector<float>();
  if (std::any_of(v.begin(), v.end(), [](float e) { return e != 2.0f; })) throw tide::Error("wrong result");
  return {(t1 - t0) / 1e3 / ops, static_cast<double>(f1 - f0) / ops};
}

/// Seconds for 10 x randn of n x n, and then (with_matmul) a matmul of each,
/// to the end of the work.
double random_matrices(tide::Engine& engine, int n, bool with_matmul) {
  tide::EngineScope scope(engine);
  engine.wait_all();
  const std::int64_t t0 = now_ns();
  for (int i = 0; i < 10; ++i) {
    tide::Tensor a = tide::randn({n, n});
    if (with_matmul) tide::Tensor b = tide::matmul(a, a);
  }
  engine.wait_all();
  return (now_ns() - t0) * 1e-9;
}

struct Row {
  std::int64_t n;
  double async_us, naive_us, async_faults, naive_faults;
  std::uint64_t async_peak_queued_bytes;
};

}  // namespace

int main(int argc, char** argv) try {
  Options o;
  CLI::App app{"The cost of y = x + 1 per op at several sizes, async engine against naive, in one run."};
  app.option_defaults()->always_capture_default();
  app.add_option("--sizes", o.sizes, "elements of x (f32), comma separated")->delimiter(',')->check(CLI::PositiveNumber);
  app.add_option("--ops", o.ops, "ops per run")->check(at_least(1));
  app.add_option("--runs", o.runs, "runs per engine and size (engines alternate)")->check(at_least(1));
  app.add_option("--streaming-cap-mb", o.streaming_cap_mb,
                 "the async engine's max_streaming_host_bytes, MiB (0: unbounded; default: the library's)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--matmul-size", o.matmul_size, "rows and columns of the random matrices (0: skip them)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--host-cap-mb", o.host_cap_mb,
                 "the async engine's max_queued_host_bytes, MiB (0: unbounded; default: the library's)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-queued-ops", o.max_queued_ops,
                 "the async engine's max_queued_ops (0: unbounded; default: the library's)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--json", o.json, "also write every number as JSON to this file");
  if (const int status = tide::examples::parse_command_line(app, argc, argv, true); status >= 0) return status;

  tide::EngineOptions ao, no;
  ao.kind = tide::EngineKind::async;
  if (o.max_queued_ops >= 0) ao.policy.max_queued_ops = static_cast<std::uint64_t>(o.max_queued_ops);
  if (o.host_cap_mb >= 0) ao.policy.max_queued_host_bytes = static_cast<std::uint64_t>(o.host_cap_mb * (1 << 20));
  if (o.streaming_cap_mb >= 0)
    ao.policy.max_streaming_host_bytes = static_cast<std::uint64_t>(o.streaming_cap_mb * (1 << 20));
  no.kind = tide::EngineKind::naive;
  auto async = tide::Engine::create(ao);
  auto naive = tide::Engine::create(no);
  std::printf("# bench_ops: %d x y = x + 1 (f32) per run, %d runs per engine and size, engines alternated\n", o.ops,
              o.runs);
  std::printf("# async policy: %s\n", async->policy().str().c_str());
  std::printf("# us/op: the loop and the final wait, per op (median); faults/op: minor page faults per op (median)\n");
  std::printf("#   elements |  async us/op  naive us/op  async/naive | async faults/op  naive faults/op | async peak queued\n");
  std::fflush(stdout);
  std::vector<Row> rows;
  for (const std::int64_t n : o.sizes) {
    std::vector<double> a_us, n_us, a_f, n_f;
    run_once(*async, n, std::min(o.ops, 100));  // warm-up
    run_once(*naive, n, std::min(o.ops, 100));
    async->reset_stats();
    for (int r = 0; r < o.runs; ++r) {
      const bool async_first = r % 2 == 0;
      for (int k = 0; k < 2; ++k) {
        const bool use_async = (k == 0) == async_first;
        const Sample s = run_once(use_async ? *async : *naive, n, o.ops);
        (use_async ? a_us : n_us).push_back(s.us_per_op);
        (use_async ? a_f : n_f).push_back(s.faults_per_op);
      }
    }
    Row row{n, median(a_us), median(n_us), median(a_f), median(n_f), async->stats().peak_queued_bytes};
    rows.push_back(row);
    std::printf("%12lld | %12.3f %12.3f %12.2f | %15.2f %16.2f | %10.1f MiB\n", static_cast<long long>(n),
                row.async_us, row.naive_us, row.async_us / row.naive_us, row.async_faults, row.naive_faults,
                static_cast<double>(row.async_peak_queued_bytes) / (1 << 20));
  }

  // The chapter's random matrices: medians of seconds per 10, per engine.
  struct Random {
    const char* name;
    bool matmul;
    double async_s, naive_s;
  };
  std::vector<Random> random{{"randn", false, 0, 0}, {"randn+matmul", true, 0, 0}};
  if (o.matmul_size > 0) {
    std::printf("# 10 x randn(%d, %d) [+ matmul(a, a)], f32, to the end of the work; s per 10 (median)\n",
                o.matmul_size, o.matmul_size);
    std::printf("#        work |      async s      naive s\n");
    for (Random& r : random) {
      std::vector<double> a_s, n_s;
      random_matrices(*async, o.matmul_size, r.matmul);  // warm-up: BLAS threads, cache
      random_matrices(*naive, o.matmul_size, r.matmul);
      for (int k = 0; k < o.runs; ++k) {
        const bool async_first = k % 2 == 0;
        (async_first ? a_s : n_s).push_back(random_matrices(async_first ? *async : *naive, o.matmul_size, r.matmul));
        (async_first ? n_s : a_s).push_back(random_matrices(async_first ? *naive : *async, o.matmul_size, r.matmul));
      }
      r.async_s = median(a_s);
      r.naive_s = median(n_s);
      std::printf("%13s | %12.4f %12.4f\n", r.name, r.async_s, r.naive_s);
    }
  }

  if (!o.json.empty()) {
    std::ofstream f = tide::examples::open_json(o.json);
    tide::examples::JsonWriter j(f);
    tide::examples::begin_benchmark(j, "bench_ops", tide::examples::command_line(argc, argv));
    j.field("ops", o.ops).field("runs", o.runs).field("async_policy", async->policy().str());
    j.key("rows").begin_array();
    for (const Row& r : rows) {
      j.begin_object();
      j.field("elements", r.n).field("async_us_per_op", r.async_us).field("naive_us_per_op", r.naive_us);
      j.field("async_over_naive", r.async_us / r.naive_us);
      j.field("async_faults_per_op", r.async_faults).field("naive_faults_per_op", r.naive_faults);
      j.field("async_peak_queued_bytes", r.async_peak_queued_bytes);
      j.end_object();
    }
    j.end_array();
    if (o.matmul_size > 0) {
      j.field("matmul_size", o.matmul_size);
      j.key("random").begin_array();
      for (const Random& r : random) {
        j.begin_object();
        j.field("work", r.name).field("async_s", r.async_s).field("naive_s", r.naive_s);
        j.end_object();
      }
      j.end_array();
    }
    j.end_object();
    f << "\n";
  }
  return 0;
} catch (const tide::Error& e) {
  std::fprintf(stderr, "bench_ops: %s\n", e.what());
  return 1;
}
