// Shared by the ops tests: an engine per test (parameterized over the engine
// kind), random host inputs, a check that a misuse enqueued nothing, and
// bit-for-bit comparisons of tensors.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include <tide/tide.h>

namespace tide {
/// Lets GoogleTest print a parameter by name.
inline void PrintTo(EngineKind k, std::ostream* os) { *os << engine_kind_name(k); }
}  // namespace tide

namespace tide::testing {

/// A fresh engine of the parameter's kind, with two CPU devices, made
/// current for the test's duration.
class OpsTest : public ::testing::TestWithParam<EngineKind> {
 protected:
  void SetUp() override {
    EngineOptions opts;
    opts.kind = GetParam();
    opts.cpu_devices = 2;
    opts.cuda_devices = 0;
    eng_ = Engine::create(opts);
    scope_.emplace(*eng_);
  }
  void TearDown() override {
    scope_.reset();
    eng_.reset();
  }

  Engine& eng() { return *eng_; }
  std::uint64_t pushed() const { return eng_->stats().ops_pushed; }

  std::unique_ptr<Engine> eng_;
  std::optional<EngineScope> scope_;
};

inline std::string kind_name(const ::testing::TestParamInfo<EngineKind>& info) {
  return engine_kind_name(info.param);
}

#define TIDE_OPS_TEST_SUITE(Suite)                                                          \
  INSTANTIATE_TEST_SUITE_P(Engines, Suite,                                                  \
                           ::testing::Values(::tide::EngineKind::async, ::tide::EngineKind::naive), \
                           ::tide::testing::kind_name)

/// `n` values from a fixed-seed std::mt19937: uniform in [lo, hi] (integers
/// for i32).
template <typename T>
std::vector<T> random_values(std::size_t n, std::uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 gen(seed);
  std::vector<T> v(n);
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<T> dist(static_cast<T>(lo), static_cast<T>(hi));
    for (auto& x : v) x = dist(gen);
  } else {
    std::uniform_real_distribution<T> dist(static_cast<T>(lo), static_cast<T>(hi));
    for (auto& x : v) x = dist(gen);
  }
  return v;
}

/// What `f` throws as an E (a test failure when it throws nothing).
template <typename E, typename F>
std::string message_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

/// Calls f(float{}) and f(double{}).
template <typename F>
void for_each_floating(F f) {
  f(float{});
  f(double{});
}

/// Runs `misuse`, expects it to throw E, and expects no op to have been
/// pushed meanwhile (bad input throws before anything is enqueued).
#define EXPECT_REJECTED(E, misuse)                                   \
  do {                                                               \
    const std::uint64_t pushed_before_ = eng().stats().ops_pushed;   \
    EXPECT_THROW(misuse, E);                                         \
    EXPECT_EQ(eng().stats().ops_pushed, pushed_before_) << #misuse;  \
  } while (0)

/// f(T{}) for f32, f64 and i32: the dtypes most tests cover.
template <typename F>
void for_each_dtype_of(F f) {
  f(float{});
  f(double{});
  f(std::int32_t{});
}

/// f(T{}) for every numeric dtype, i64 too.
template <typename F>
void for_each_numeric_dtype(F f) {
  for_each_dtype_of(f);
  f(std::int64_t{});
}

/// The same bytes (so NaNs compare, and -0 differs from +0). An empty
/// vector's data() may be null, which memcmp must not be given.
template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/// Every element of a[k] and b[k], bit for bit (f32 or f64 tensors).
inline void expect_same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k].dtype() == DType::f64)
      EXPECT_TRUE(same_bits(a[k].to_vector<double>(), b[k].to_vector<double>())) << what << "[" << k << "]";
    else
      EXPECT_TRUE(same_bits(a[k].to_vector<float>(), b[k].to_vector<float>())) << what << "[" << k << "]";
  }
}

}  // namespace tide::testing
