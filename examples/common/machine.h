// Where and when a benchmark ran, for the JSON it writes.
#pragma once

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "json_writer.h"

namespace tide::examples {

inline std::string iso8601_utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

inline std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

/// Writes "machine": {...} and "date": "..." into the open object.
inline void write_machine(JsonWriter& w) {
  w.key("machine").begin_object();
  w.field("hostname", hostname());
  w.field("nproc", std::thread::hardware_concurrency());
  w.field("compiler_version", __VERSION__);
  w.end_object();
  w.field("date", iso8601_utc_now());
}

inline std::string command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) (s += i ? " " : "") += argv[i];
  return s;
}

/// A benchmark's JSON file, open for writing; throws std::runtime_error
/// ("cannot write PATH") when it cannot be made.
inline std::ofstream open_json(const std::string& path) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  return f;
}

/// Opens a benchmark's JSON object with what every one begins with: the
/// benchmark's name, the machine and date, and the command line.
inline void begin_benchmark(JsonWriter& w, const char* benchmark, const std::string& command_line) {
  w.begin_object();
  w.field("benchmark", benchmark);
  write_machine(w);
  w.field("command_line", command_line);
}

}  // namespace tide::examples
