// bench_scaling's command line.
#pragma once

#include <cstdlib>
#include <string>

namespace tide::examples::scaling {

struct Config {
  int steps = 20;  // steps per run for large ops; smaller ops run more (OpSize::steps_scale)
  int reps = 5;
  bool quick = false;
  bool os_malloc = false;  // leave glibc's malloc settings alone
  std::string json_path, dat_path;
};

// --- arguments ---------------------------------------------------------------

inline const char* kUsage =
    "usage: mpirun -np R bench_scaling [--steps N] [--reps N] [--quick] [--os-malloc] [--json FILE] [--dat FILE]\n"
    "  --steps N   steps per run for large ops; medium ops run 5x, tiny ops 10x as many (default 20)\n"
    "  --reps N    timed repetitions per configuration, median reported (default 5)\n"
    "  --quick     --steps 6 --reps 1 and a quarter of the cost-model ops: a smoke test\n"
    "  --os-malloc keep glibc's default malloc settings (freed large blocks go back to the OS)\n"
    "  --json FILE also write every number as JSON (rank 0)\n"
    "  --dat FILE  also write one line per configuration for gnuplot (rank 0)\n";

// Returns an error message, or "" when the arguments are good.
inline std::string parse_args(int argc, char** argv, Config& cfg, bool& help) {
  bool steps_set = false, reps_set = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool has_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto next = [&](std::string& out) {
      if (has_value) return out = value, true;
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    auto positive = [&](int& out) -> std::string {
      std::string text;
      if (!next(text)) return arg + " needs a value";
      char* end = nullptr;
      long v = std::strtol(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || v < 1 || v > 1'000'000)
        return arg + " expects a positive integer, got '" + text + "'";
      out = static_cast<int>(v);
      return "";
    };
    std::string err;
    if (arg == "--help" || arg == "-h") {
      help = true;
    } else if (arg == "--steps") {
      err = positive(cfg.steps);
      steps_set = true;
    } else if (arg == "--reps") {
      err = positive(cfg.reps);
      reps_set = true;
    } else if (arg == "--quick") {
      cfg.quick = true;
    } else if (arg == "--os-malloc") {
      cfg.os_malloc = true;
    } else if (arg == "--json" || arg == "--dat") {
      std::string& path = arg == "--json" ? cfg.json_path : cfg.dat_path;
      if (!next(path) || path.empty()) err = arg + " needs a file name";
    } else {
      err = "unknown argument '" + std::string(argv[i]) + "'";
    }
    if (!err.empty()) return err;
  }
  if (cfg.quick) {
    if (!steps_set) cfg.steps = 6;
    if (!reps_set) cfg.reps = 1;
  }
  return "";
}

}  // namespace tide::examples::scaling
