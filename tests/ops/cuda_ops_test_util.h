// Shared by the CUDA ops tests: an engine with cpu:0 and cuda:0, host values
// moved to the GPU, and element comparisons that report how many elements
// differ and the first few, rather than one failure per element of a
// million-element tensor. Every test compares the GPU against the CPU
// backend on the same inputs.
#pragma once

#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "../gpu_test_util.h"
#include "ops_test_util.h"

namespace tide::testing {

/// An engine of `kind` with one GPU, current while this lives. Construct it
/// after TIDE_REQUIRE_GPU().
class GpuEngine {
 public:
  explicit GpuEngine(EngineKind kind) {
    EngineOptions o;
    o.kind = kind;
    o.cuda_devices = 1;
    engine_ = Engine::create(o);
    scope_.emplace(*engine_);
  }
  Engine& operator*() { return *engine_; }
  Engine* operator->() { return engine_.get(); }

 private:
  std::unique_ptr<Engine> engine_;
  std::optional<EngineScope> scope_;  // ends before the engine
};

/// Sizes that are not multiples of a vector width or block size, and empty.
inline const std::vector<std::int64_t> kGpuSizes = {0, 1, 3, 1000, (std::int64_t{1} << 20) + 7};

/// `values` on cuda:0, made on cpu:0 and moved there.
template <typename T>
Tensor to_gpu(const std::vector<T>& values, const Shape& shape) {
  return copy_to(from_vector(values, shape), cuda(0));
}
template <typename T>
Tensor to_gpu(const std::vector<T>& values) {
  return to_gpu(values, Shape{static_cast<std::int64_t>(values.size())});
}

/// t's elements as T. A function rather than the member template, which a
/// generic lambda would need to spell `t.template to_vector<T>()` on a
/// callable's result.
template <typename T>
std::vector<T> values(const Tensor& t) {
  return t.to_vector<T>();
}

/// Equal values, where two NaNs are equal (their payloads may differ
/// between libraries) and +0 and -0 are not.
template <typename T>
bool same_value(T got, T want) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
    return got == want && std::signbit(got) == std::signbit(want);
  } else {
    return got == want;
  }
}

/// Expects ok(got[i], want[i], i) for every i; on failure names `what`, the
/// count of differing elements and the first five.
template <typename T, typename Ok>
void expect_elements(const std::vector<T>& got, const std::vector<T>& want, Ok ok,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t bad = 0;
  std::ostringstream first;
  first << std::setprecision(std::numeric_limits<T>::max_digits10);
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (ok(got[i], want[i], i)) continue;
    if (bad < 5) first << " [" << i << "] gpu " << got[i] << " cpu " << want[i] << ";";
    ++bad;
  }
  EXPECT_EQ(bad, 0u) << what << " (of " << got.size() << "):" << first.str();
}

template <typename T>
void expect_exact(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  expect_elements(got, want, [](T g, T w, std::size_t) { return same_value(g, w); }, what);
}

/// Within `ulps` units of T's epsilon relative to the CPU's value, or the
/// same special value (infinity, NaN, zero).
template <typename T>
void expect_ulps(const std::vector<T>& got, const std::vector<T>& want, double ulps,
                 const std::string& what) {
  const double eps = std::numeric_limits<T>::epsilon();
  expect_elements(
      got, want,
      [&](T g, T w, std::size_t) {
        if (same_value(g, w)) return true;
        if (!std::isfinite(g) || !std::isfinite(w)) return false;
        return std::abs(static_cast<double>(g) - static_cast<double>(w)) <=
               ulps * eps * std::abs(static_cast<double>(w));
      },
      what);
}

inline std::string label(const char* op, DType t, std::int64_t n) {
  return std::string(op) + " " + dtype_name(t) + " n=" + std::to_string(n);
}

}  // namespace tide::testing
