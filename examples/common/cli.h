// What the examples share about their command lines, all parsed with CLI11:
// the exit status of a parse, and checks whose messages say what a value
// must be.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>
#include <tide/core/device.h>

namespace tide::examples {

/// Parses argv into `app`. Returns -1 when the program goes on, else the
/// status to end it with: 0 after --help (the help printed), 2 after a
/// usage error (CLI11's message, which names the option, on stderr).
/// `print`: whether this process prints (under mpirun, rank 0 alone does).
inline int parse_command_line(CLI::App& app, int argc, char** argv, bool print = true) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A bad argument is a usage error (status 2) whatever CLI11 numbers it.
    const int code = print ? app.exit(e) : e.get_exit_code();
    return code == 0 ? 0 : 2;
  }
  return -1;
}

/// The exit status of a benchmark run with --check whose target was missed
/// (1 is a failure, 2 a usage error).
inline constexpr int kTargetMissed = 3;

/// --check: the benchmark exits with kTargetMissed when a target is missed
/// (after printing and writing everything), so that scripts can rely on it.
inline void add_check_flag(CLI::App& app, bool& check) {
  app.add_flag("--check", check, "exit with status 3 when a target is missed (after all output)");
}

/// A whole number `min` or more, with a message that says so.
inline CLI::Validator at_least(long long min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || errno == ERANGE || v < min)
          return "must be a whole number " + std::to_string(min) + " or more, got '" + text + "'";
        return "";
      },
      ">= " + std::to_string(min));
}

/// A whole number from 0 to 2^64 - 1 (CLI11 itself takes "-1" for an
/// unsigned option, as 2^64 - 1).
inline CLI::Validator unsigned_whole() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        if (digits) (void)std::strtoull(text.c_str(), &end, 10);
        if (!digits || errno == ERANGE)
          return "must be a whole number from 0 to 18446744073709551615, got '" + text + "'";
        return "";
      },
      "UINT");
}

/// A real number above `bound` (or `bound` itself too, with `bound_allowed`),
/// with a message that says so (CLI11's PositiveNumber and Range print the
/// whole range of a double, 300 digits).
inline CLI::Validator number_above(double bound, bool bound_allowed) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", bound);
  const std::string wanted = bound_allowed ? std::string(b) + " or more" : std::string("greater than ") + b;
  return CLI::Validator(
      [bound, bound_allowed, wanted](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v) || (bound_allowed ? !(v >= bound) : !(v > bound)))
          return "must be a number " + wanted + ", got '" + text + "'";
        return "";
      },
      (bound_allowed ? ">= " : "> ") + std::string(b));
}

/// A file name to write: not empty.
inline CLI::Validator file_name() {
  return CLI::Validator(
      [](std::string& text) { return text.empty() ? std::string("needs a file name") : std::string(); }, "FILE");
}

/// A device name that tide::Device::parse takes: cpu:N or cuda:N.
inline CLI::Validator device_name() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          tide::Device::parse(text);
        } catch (const std::exception& e) {
          return e.what();
        }
        return "";
      },
      "cpu:N|cuda:N");
}

/// For a GPU-only program: 2, saying so, when `device` is not a GPU; 77
/// (skipped), saying why, when this machine has no CUDA device; -1 when
/// the program can go on. `what` says what the program measures.
inline int gpu_only(const char* program, const char* what, const tide::Device& device) {
  if (!device.is_cuda()) {
    std::fprintf(stderr, "%s measures %s: --device must be cuda:N\n", program, what);
    return 2;
  }
  if (tide::cuda_device_count() == 0) {
    std::fprintf(stderr, "%s: no CUDA device here (%s)\n", program,
                 tide::cuda_built() ? "cudaGetDeviceCount reports none" : "built without the CUDA backend");
    return 77;
  }
  return -1;
}

}  // namespace tide::examples
