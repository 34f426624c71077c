// All-reduce bandwidth, in the style of nccl-tests: tide's all_reduce_ (an
// op on the comm stream, pushed back to back and waited for once) against
// MPI's own MPI_Allreduce called in a loop, in the same run. Each size is
// measured --reps times, tide and MPI alternated, so that the machine's
// drift hits both; a time is the mean of --iters iterations averaged across
// ranks, the table gives the medians over the repetitions and the median of
// the repetitions' tide/MPI ratios. Bus bandwidth uses nccl-tests'
// all-reduce factor.
//
//   mpirun -np 2 bench_allreduce [--min-bytes 8] [--max-bytes 64M] [--step 4]
//                                [--iters N] [--warmup N] [--reps N] [--json FILE]
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <tide/tide.h>

#include "common/cli.h"
#include "common/json_writer.h"
#include "common/machine.h"
#include "common/timing.h"

namespace {

using tide::examples::at_least;
using tide::examples::now_ns;

struct Options {
  std::int64_t min_bytes = 8, max_bytes = 64 << 20;
  int iters = 20, warmup = 3, reps = 5;
  double step = 4;
  std::string json;
};

/// "8", "64K", "16M", "1G" as bytes; "" when `text` is a size, else what is wrong.
std::string parse_size(const std::string& text, std::int64_t& bytes) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const std::string unit = end;
  const double mult = unit == "" ? 1 : unit == "K" ? 1 << 10 : unit == "M" ? 1 << 20 : unit == "G" ? 1 << 30 : -1;
  if (mult < 0 || !(v > 0)) return "bad size '" + text + "' (try 8, 64K, 16M)";
  bytes = static_cast<std::int64_t>(v * mult);
  return "";
}

/// Reads the command line into `o` (rank 0 prints what it has to say).
/// Returns -1 when the program goes on, else the status to end it with (0
/// after --help, 2 after a bad argument).
int parse(int argc, char** argv, Options& o, bool print) {
  CLI::App app{"All-reduce bandwidth of tide's all_reduce_ against MPI_Allreduce (run it under mpirun -np N)."};
  app.option_defaults()->always_capture_default();
  std::string min_bytes = "8", max_bytes = "64M";
  auto size = CLI::Validator(
      [](std::string& text) {
        std::int64_t bytes = 0;
        return parse_size(text, bytes);
      },
      "B|K|M|G");
  app.add_option("--min-bytes", min_bytes, "smallest message (8, 64K, 16M)")->check(size);
  app.add_option("--max-bytes", max_bytes, "largest message")->check(size);
  app.add_option("--step", o.step, "factor from one size to the next")->check(tide::examples::number_above(1, false));
  app.add_option("--iters", o.iters, "timed iterations per repetition")->check(at_least(1));
  app.add_option("--warmup", o.warmup, "untimed iterations first")->check(at_least(0));
  app.add_option("--reps", o.reps, "repetitions per size, tide and MPI alternated")->check(at_least(1));
  app.add_option("--json", o.json, "also write every number as JSON to this file (rank 0)");
  if (const int status = tide::examples::parse_command_line(app, argc, argv, print); status >= 0) return status;
  parse_size(min_bytes, o.min_bytes);
  parse_size(max_bytes, o.max_bytes);
  if (o.min_bytes > o.max_bytes) {
    if (print) std::fprintf(stderr, "bench_allreduce: --min-bytes is larger than --max-bytes\n");
    return 2;
  }
  return -1;
}

double mean_across_ranks(double v, int size) {
  double sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / size;
}

struct Row {
  std::int64_t bytes, count;
  double tide_us, mpi_us, ratio, tide_push_ns;
  long wrong;
};

}  // namespace

int main(int argc, char** argv) try {
  auto rt = tide::Runtime::init(argc, argv);
  Options o;
  if (const int status = parse(argc, argv, o, rt->rank() == 0); status >= 0) return status;
  const int p = rt->size(), r = rt->rank();
  if (!rt->world().uses_mpi()) rt->log("note: not started by mpirun; a one-rank world measures local copies only");
  // nccl-tests: an all-reduce moves 2(n-1)/n of the data over each rank's link.
  const double bus_factor = p > 1 ? 2.0 * (p - 1) / p : 1.0;

  rt->log("# tide bench_allreduce: " + std::to_string(p) + " ranks, f32 sum, " + std::to_string(o.iters) +
          " iterations after " + std::to_string(o.warmup) + " warm-up, " + std::to_string(o.reps) +
          " repetitions (tide and MPI alternated); times averaged across ranks, medians over the repetitions");
  rt->log("# tide/MPI: median of the repetitions' ratios");
  rt->log("# push ns: median time of one all_reduce_ call on the frontend (the launch overhead)");
  rt->log("#       size     count  type |  tide us  algbw  busbw | MPI us  algbw  busbw | tide/MPI  push ns  #wrong");
  std::vector<Row> rows;
  for (double size = static_cast<double>(o.min_bytes); size <= static_cast<double>(o.max_bytes); size *= o.step) {
    const std::int64_t count = std::max<std::int64_t>(1, static_cast<std::int64_t>(size) / 4);
    const std::int64_t bytes = count * 4;
    if (!rows.empty() && rows.back().bytes == bytes) continue;
    // Correctness: rank r contributes r + 1 everywhere; the sum is exact.
    tide::Tensor check = tide::full({count}, r + 1.0);
    rt->world().all_reduce_(check);
    long wrong = 0;
    for (float v : check.to_vector<float>()) wrong += v != p * (p + 1) / 2.0f;

    tide::Tensor t = tide::zeros({count});
    std::vector<float> buf(static_cast<std::size_t>(count), 0.0f);
    std::vector<std::int64_t> push_ns;
    std::vector<double> tide_reps, mpi_reps, ratios;
    for (int rep = 0; rep < o.reps; ++rep) {
      for (int i = 0; i < o.warmup; ++i) rt->world().all_reduce_(t);
      rt->wait_all();
      MPI_Barrier(MPI_COMM_WORLD);
      std::int64_t t0 = now_ns();
      for (int i = 0; i < o.iters; ++i) {
        std::int64_t a = now_ns();
        rt->world().all_reduce_(t);
        push_ns.push_back(now_ns() - a);
      }
      rt->wait_all();
      tide_reps.push_back(mean_across_ranks((now_ns() - t0) / 1e3 / o.iters, p));

      for (int i = 0; i < o.warmup; ++i)
        MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = now_ns();
      for (int i = 0; i < o.iters; ++i)
        MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      mpi_reps.push_back(mean_across_ranks((now_ns() - t0) / 1e3 / o.iters, p));
      ratios.push_back(mpi_reps.back() > 0 ? tide_reps.back() / mpi_reps.back() : 0.0);
    }
    const double tide_us = tide::examples::median(tide_reps), mpi_us = tide::examples::median(mpi_reps);
    long wrong_total = 0;
    MPI_Allreduce(&wrong, &wrong_total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

    const double push = mean_across_ranks(tide::examples::median(push_ns), p);
    Row row{bytes, count, tide_us, mpi_us, tide::examples::median(ratios), push, wrong_total};
    rows.push_back(row);
    auto gbs = [&](double us) { return us > 0 ? bytes / us / 1e3 : 0.0; };
    char line[256];
    std::snprintf(line, sizeof line,
                  "%12lld %9lld  float | %8.1f %6.2f %6.2f | %6.1f %6.2f %6.2f | %8.2f %8.0f %7ld",
                  static_cast<long long>(bytes), static_cast<long long>(count), tide_us, gbs(tide_us),
                  gbs(tide_us) * bus_factor, mpi_us, gbs(mpi_us), gbs(mpi_us) * bus_factor,
                  row.ratio, row.tide_push_ns, wrong_total);
    rt->log(line);
  }

  long wrong = 0;
  double worst_big = 0, push_max = 0;
  for (const Row& row : rows) {
    wrong += row.wrong;
    if (row.bytes >= (1 << 20)) worst_big = std::max(worst_big, row.ratio);
    push_max = std::max(push_max, row.tide_push_ns);
  }
  rt->log(std::string("# ") + (wrong ? "FAILED: wrong results" : "OK: every result exact"));
  if (worst_big > 0) {
    char v[256];
    std::snprintf(v, sizeof v,
                  "verdict: at 1 MiB and above tide's all-reduce takes at most %.2fx MPI's (median of %d "
                  "alternated repetitions; target <= 1.05: %s); "
                  "push per collective at most %.0f ns (target < 2000: %s)",
                  worst_big, o.reps, worst_big <= 1.05 ? "met" : "MISSED", push_max,
                  push_max < 2000 ? "met" : "MISSED");
    rt->log(v);
  }

  if (!o.json.empty() && r == 0) {
    std::ofstream f(o.json);
    if (!f) throw tide::ValueError("cannot write " + o.json);
    tide::examples::JsonWriter j(f);
    j.begin_object();
    j.field("benchmark", "bench_allreduce");
    tide::examples::write_machine(j);
    j.field("command_line", tide::examples::command_line(argc, argv));
    j.field("ranks", p).field("iters", o.iters).field("warmup", o.warmup).field("reps", o.reps);
    j.field("bus_factor", bus_factor);
    j.key("rows").begin_array();
    for (const Row& row : rows) {
      j.begin_object();
      j.field("bytes", row.bytes).field("count", row.count).field("tide_us", row.tide_us);
      j.field("mpi_us", row.mpi_us).field("tide_over_mpi", row.ratio).field("tide_push_ns", row.tide_push_ns);
      j.field("wrong", row.wrong);
      j.end_object();
    }
    j.end_array();
    j.end_object();
    f << "\n";
  }
  return wrong ? 1 : 0;
} catch (const tide::Error& e) {
  std::fprintf(stderr, "bench_allreduce: %s\n", e.what());
  return 2;
}
