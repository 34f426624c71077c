// All-reduce bandwidth, in the style of nccl-tests: tide's all_reduce_ (an
// op on the comm stream, pushed back to back and waited for once) against
// MPI's own MPI_Allreduce called in a loop, in the same run. Each size is
// measured --reps times, tide and MPI alternated (each first in every other
// repetition), so that the machine's drift hits both; times are averaged across ranks, the table gives the
// medians over the repetitions and the median of the repetitions' tide/MPI
// ratios. Bus bandwidth uses nccl-tests' all-reduce factor.
//
// A burst of n collectives costs about a + n b: b per collective, and a
// once per burst (for tide the comm thread's wake-up at the first push and
// the frontend's at the end; for MPI the ranks' skew after the barrier).
// Each repetition times, for both, a burst of --iters and a long one of
// kLong x --iters: the "steady" columns are the long burst's time per
// collective (a spread over many, what bandwidth means), the "burst" columns
// the short burst's, and "fixed us" is a, fitted over the two.
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
  bool check = false;  // --check: exit 3 when a target is missed
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
  tide::examples::add_check_flag(app, o.check);
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

constexpr int kLong = 10;  // the long burst, in short ones

/// One repetition's bursts (total us) of n and kLong n collectives: the time
/// per collective of each, and a of a + n b fitted over the two.
struct Fit {
  double short_us, steady_us, fixed_us;
};
Fit fit(double short_total_us, double long_total_us, int n) {
  const double b = (long_total_us - short_total_us) / ((kLong - 1.0) * n);
  return {short_total_us / n, long_total_us / (kLong * n), short_total_us - n * b};
}

struct Row {
  std::int64_t bytes, count;
  double tide_us, mpi_us, ratio;                     // bursts of --iters, as measured
  double tide_steady_us, mpi_steady_us, steady_ratio;  // per collective, long bursts
  double tide_fixed_us, mpi_fixed_us;                  // per burst, the fit's a
  double tide_push_ns;
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
  rt->log("# steady: the time per collective in a burst of " + std::to_string(kLong * o.iters) +
          "; tide/MPI: median of the repetitions' ratios");
  rt->log("# burst of " + std::to_string(o.iters) + ": time per collective as measured, the burst's fixed cost included");
  rt->log("# fixed us: a of a + n b fitted over the two bursts, the cost once per burst (noisy: a difference)");
  rt->log("# push ns: time of one all_reduce_ call on the frontend (a burst's pushes over their number; median of the bursts)");
  rt->log("#                               |        steady: tide        |     steady: MPI      | tide/  |"
          "  burst of " + std::to_string(o.iters) + " (us)    |  fixed us       |");
  rt->log("#       size     count  type |  tide us  algbw  busbw | MPI us  algbw  busbw |   MPI  |    tide     MPI  ratio |"
          "    tide     MPI | push ns #wrong");
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
    rt->wait_all();  // t is written before MPI touches it
    std::vector<std::int64_t> push_ns;
    auto tide_burst = [&](int n) {  // total us, averaged across ranks
      for (int i = 0; i < o.warmup; ++i) rt->world().all_reduce_(t);
      rt->wait_all();
      MPI_Barrier(MPI_COMM_WORLD);
      const std::int64_t t0 = now_ns();
      // The pushes are timed as a whole: a clock read around each would be
      // charged to the burst (two reads cost a tenth of a small collective).
      for (int i = 0; i < n; ++i) rt->world().all_reduce_(t);
      push_ns.push_back((now_ns() - t0) / n);
      rt->wait_all();
      return mean_across_ranks((now_ns() - t0) / 1e3, p);
    };
    // MPI reduces the same memory as tide (idle between tide's bursts, which
    // end in wait_all): a buffer of its own measured up to 10% apart at 8 and
    // 16 MiB here, where the machine's cache and pages decide, not the call.
    float* const buf = static_cast<float*>(t.storage()->data());
    auto mpi_burst = [&](int n) {
      for (int i = 0; i < o.warmup; ++i)
        MPI_Allreduce(MPI_IN_PLACE, buf, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      const std::int64_t t0 = now_ns();
      for (int i = 0; i < n; ++i)
        MPI_Allreduce(MPI_IN_PLACE, buf, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      return mean_across_ranks((now_ns() - t0) / 1e3, p);
    };
    std::vector<Fit> tide_reps, mpi_reps;
    std::vector<double> ratios, steady_ratios;
    for (int rep = 0; rep < o.reps; ++rep) {
      // Odd repetitions run MPI first: neither side always follows the other.
      double tide_short, mpi_short, tide_long, mpi_long;
      if (rep % 2 == 0) {
        tide_short = tide_burst(o.iters);
        mpi_short = mpi_burst(o.iters);
        tide_long = tide_burst(kLong * o.iters);
        mpi_long = mpi_burst(kLong * o.iters);
      } else {
        mpi_short = mpi_burst(o.iters);
        tide_short = tide_burst(o.iters);
        mpi_long = mpi_burst(kLong * o.iters);
        tide_long = tide_burst(kLong * o.iters);
      }
      tide_reps.push_back(fit(tide_short, tide_long, o.iters));
      mpi_reps.push_back(fit(mpi_short, mpi_long, o.iters));
      ratios.push_back(mpi_short > 0 ? tide_short / mpi_short : 0.0);
      const double b = mpi_reps.back().steady_us;
      steady_ratios.push_back(b > 0 ? tide_reps.back().steady_us / b : 0.0);
    }
    auto med = [](const std::vector<Fit>& fits, double Fit::*field) {
      std::vector<double> v;
      for (const Fit& f : fits) v.push_back(f.*field);
      return tide::examples::median(v);
    };
    const double tide_us = med(tide_reps, &Fit::short_us), mpi_us = med(mpi_reps, &Fit::short_us);
    long wrong_total = 0;
    MPI_Allreduce(&wrong, &wrong_total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);

    const double push = mean_across_ranks(tide::examples::median(push_ns), p);
    Row row{bytes,
            count,
            tide_us,
            mpi_us,
            tide::examples::median(ratios),
            med(tide_reps, &Fit::steady_us),
            med(mpi_reps, &Fit::steady_us),
            tide::examples::median(steady_ratios),
            med(tide_reps, &Fit::fixed_us),
            med(mpi_reps, &Fit::fixed_us),
            push,
            wrong_total};
    rows.push_back(row);
    auto gbs = [&](double us) { return us > 0 ? bytes / us / 1e3 : 0.0; };
    char line[320];
    std::snprintf(line, sizeof line,
                  "%12lld %9lld  float | %8.1f %6.2f %6.2f | %6.1f %6.2f %6.2f | %6.2f | %7.1f %7.1f %6.2f | "
                  "%7.0f %7.0f | %7.0f %6ld",
                  static_cast<long long>(bytes), static_cast<long long>(count), row.tide_steady_us,
                  gbs(row.tide_steady_us), gbs(row.tide_steady_us) * bus_factor, row.mpi_steady_us,
                  gbs(row.mpi_steady_us), gbs(row.mpi_steady_us) * bus_factor, row.steady_ratio, tide_us, mpi_us,
                  row.ratio, row.tide_fixed_us, row.mpi_fixed_us, row.tide_push_ns, wrong_total);
    rt->log(line);
  }

  long wrong = 0;
  double worst_steady = 0, worst_burst = 0, push_max = 0;
  for (const Row& row : rows) {
    wrong += row.wrong;
    if (row.bytes >= (1 << 20)) {
      worst_steady = std::max(worst_steady, row.steady_ratio);
      worst_burst = std::max(worst_burst, row.ratio);
    }
    push_max = std::max(push_max, row.tide_push_ns);
  }
  rt->log(std::string("# ") + (wrong ? "FAILED: wrong results" : "OK: every result exact"));
  if (worst_steady > 0) {
    char v[400];
    std::snprintf(v, sizeof v,
                  "verdict: at 1 MiB and above tide's all-reduce takes at most %.2fx MPI's time per collective "
                  "in steady state (median of %d alternated repetitions; target <= 1.05: %s), at most %.2fx in "
                  "bursts of %d; push per collective at most %.0f ns (target < 2000: %s)",
                  worst_steady, o.reps, worst_steady <= 1.05 ? "met" : "MISSED", worst_burst, o.iters, push_max,
                  push_max < 2000 ? "met" : "MISSED");
    rt->log(v);
  }

  if (!o.json.empty() && r == 0) {
    std::ofstream f = tide::examples::open_json(o.json);
    tide::examples::JsonWriter j(f);
    tide::examples::begin_benchmark(j, "bench_allreduce", tide::examples::command_line(argc, argv));
    j.field("ranks", p).field("iters", o.iters).field("long_iters", kLong * o.iters).field("warmup", o.warmup).field("reps", o.reps);
    j.field("bus_factor", bus_factor);
    j.key("rows").begin_array();
    for (const Row& row : rows) {
      j.begin_object();
      j.field("bytes", row.bytes).field("count", row.count).field("tide_us", row.tide_us);
      j.field("mpi_us", row.mpi_us).field("tide_over_mpi", row.ratio);
      j.field("tide_steady_us", row.tide_steady_us).field("mpi_steady_us", row.mpi_steady_us);
      j.field("steady_tide_over_mpi", row.steady_ratio);
      j.field("tide_fixed_us", row.tide_fixed_us).field("mpi_fixed_us", row.mpi_fixed_us);
      j.field("tide_push_ns", row.tide_push_ns);
      j.field("wrong", row.wrong);
      j.end_object();
    }
    j.end_array();
    j.end_object();
    f << "\n";
  }
  if (wrong) return 1;
  const bool missed = (worst_steady > 0 && worst_steady > 1.05) || push_max >= 2000;
  return o.check && missed ? tide::examples::kTargetMissed : 0;
} catch (const tide::Error& e) {
  std::fprintf(stderr, "bench_allreduce: %s\n", e.what());
  return 2;
}
