// bench_scaling's command line.
#pragma once

#include <string>

#include "common/cli.h"

namespace tide::examples::scaling {

struct Config {
  int steps = 20;  // steps per run for large ops; smaller ops run more (OpSize::steps_scale)
  int reps = 5;
  bool quick = false;
  std::string json_path, dat_path;
};

/// Reads the command line into `cfg`; `print`: whether this rank prints
/// (rank 0 does). Returns -1 when the program goes on, else the status to
/// end it with (0 after --help, 2 after a bad argument).
inline int parse_args(int argc, char** argv, Config& cfg, bool print) {
  CLI::App app{"A data-parallel step (7 elementwise ops + all-reduce + loss) under lookahead k, for several op\n"
               "sizes: time per step, memory held, and the chapter's cost model (run it under mpirun -np R)."};
  app.option_defaults()->always_capture_default();
  const auto count = CLI::Range(1, 1'000'000);
  auto* steps = app.add_option("--steps", cfg.steps,
                               "steps per run for large ops; medium ops run 5x, tiny ops 10x as many")->check(count);
  auto* reps = app.add_option("--reps", cfg.reps, "timed repetitions per configuration, median reported")->check(count);
  app.add_flag("--quick", cfg.quick, "--steps 6 --reps 1 and a quarter of the cost-model ops: a smoke test");
  app.add_option("--json", cfg.json_path, "also write every number as JSON (rank 0)")->check(file_name());
  app.add_option("--dat", cfg.dat_path, "also write one line per configuration for gnuplot (rank 0)")
      ->check(file_name());
  if (const int status = parse_command_line(app, argc, argv, print); status >= 0) return status;
  if (cfg.quick) {
    if (steps->count() == 0) cfg.steps = 6;
    if (reps->count() == 0) cfg.reps = 1;
  }
  return -1;
}

}  // namespace tide::examples::scaling
