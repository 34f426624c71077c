// Shared by the GPU tests of matmul and the nn ops: an engine with cpu:0 and
// cuda:0 per test (parameterized over the engine kind), made only after
// TIDE_REQUIRE_GPU, and helpers that run one computation on both devices.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include <tide/tide.h>

#include "../gpu_test_util.h"
#include "ops_test_util.h"

namespace tide::testing {

class CudaOpsTest : public ::testing::TestWithParam<EngineKind> {
 protected:
  /// Call right after TIDE_REQUIRE_GPU().
  void start_engine() {
    EngineOptions o;
    o.kind = GetParam();
    o.cuda_devices = 1;
    eng_ = Engine::create(o);
    scope_.emplace(*eng_);
  }
  void TearDown() override {
    scope_.reset();
    eng_.reset();
  }

  std::unique_ptr<Engine> eng_;
  std::optional<EngineScope> scope_;
};

#define TIDE_CUDA_OPS_TEST_SUITE(Suite)                                                     \
  INSTANTIATE_TEST_SUITE_P(Engines, Suite,                                                  \
                           ::testing::Values(::tide::EngineKind::async, ::tide::EngineKind::naive), \
                           ::tide::testing::kind_name)

/// The copy of a cpu tensor on cuda:0.
inline Tensor on_gpu(const Tensor& t) { return copy_to(t, cuda(0)); }

inline std::size_t idx(std::int64_t i) { return static_cast<std::size_t>(i); }

/// c = op(a) op(b) summed in double with |terms| (the scale of a dot
/// product's rounding error in any order): a stored [k, m] when ta, b
/// stored [n, k] when tb.
template <typename T>
std::vector<double> magnitude_matmul(const std::vector<T>& a, const std::vector<T>& b,
                                     std::int64_t m, std::int64_t k, std::int64_t n, bool ta,
                                     bool tb) {
  std::vector<double> c(idx(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t p = 0; p < k; ++p)
        acc += std::abs(static_cast<double>(a[idx(ta ? p * m + i : i * k + p)]) *
                        static_cast<double>(b[idx(tb ? j * k + p : p * n + j)]));
      c[idx(i * n + j)] = acc;
    }
  return c;
}

/// A product of k terms, rounded in T in any order, is within k * u *
/// sum|a_p b_p| of the exact value (u = epsilon / 2, first order); the CPU
/// and the GPU each are, so they are within 2 k u of each other, and
/// 2 k epsilon of the magnitude sum leaves a factor 2 of margin.
template <typename T>
double gemm_rel_tolerance(std::int64_t k) {
  return 2.0 * static_cast<double>(k) * std::numeric_limits<T>::epsilon();
}

/// Each got[i] within rel * scale[i] + abs of want[i].
template <typename T>
void expect_near_scaled(const std::vector<T>& got, const std::vector<T>& want,
                        const std::vector<double>& scale, double rel, double abs = 0.0) {
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got.size(), scale.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(static_cast<double>(got[i]), static_cast<double>(want[i]), rel * scale[i] + abs)
        << "element " << i;
}

/// Equal element by element, NaN equal to NaN (the outputs of a bad label
/// or a NaN input are compared too).
template <typename T>
void expect_same(const std::vector<T>& got, const std::vector<T>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << "element " << i << ": " << got[i];
        continue;
      }
    }
    EXPECT_EQ(got[i], want[i]) << "element " << i;
  }
}

}  // namespace tide::testing
