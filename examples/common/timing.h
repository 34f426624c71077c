// Small timing helpers shared by the examples.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

namespace tide::examples {

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The median of `v` (copied, so the caller's order is kept). 0 when empty.
template <typename T>
double median(std::vector<T> v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2) return static_cast<double>(*mid);
  auto lower = *std::max_element(v.begin(), mid);
  return (static_cast<double>(lower) + static_cast<double>(*mid)) / 2;
}

/// Runs `f` `repeats` times and returns each run's wall time in seconds.
template <typename F>
std::vector<double> run_seconds(int repeats, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    std::int64_t t0 = now_ns();
    f();
    t.push_back(static_cast<double>(now_ns() - t0) * 1e-9);
  }
  return t;
}

/// Runs `f` `repeats` times and returns the median wall time in seconds.
template <typename F>
double median_seconds(int repeats, F&& f) {
  return median(run_seconds(repeats, std::forward<F>(f)));
}

}  // namespace tide::examples
