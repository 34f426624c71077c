// The math a PyTorch user writes first: pow (tensor and scalar exponents),
// sqrt, tanh, sigmoid, abs and the comparisons, against the C library on
// the host, with their edge values (NaN, infinities, -0, integer minima).
// Their gradients are checked in autograd_cases.h.
#include <cmath>
#include <limits>

#include <tide/ops/autograd.h>
#include <tide/ops/elementwise.h>
#include <tide/ops/reduction.h>

#include "ops_test_util.h"

namespace tide::testing {
namespace {

using MathOpsTest = OpsTest;
TIDE_OPS_TEST_SUITE(MathOpsTest);

constexpr std::size_t kN = 257;

template <typename T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double tol = 4 * std::numeric_limits<T>::epsilon();
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(static_cast<double>(got[i]), want[i]) << what << " at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << " at " << i;
    }
  }
}

template <typename T, typename F>
std::vector<double> reference(const std::vector<T>& a, F f) {
  std::vector<double> r;
  for (T x : a) r.push_back(static_cast<double>(f(x)));
  return r;
}

TEST_P(MathOpsTest, SmoothFunctionsMatchTheCLibrary) {
  for_each_numeric_dtype([&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      SCOPED_TRACE(dtype_name(dtype_v<T>));
      std::vector<T> v = random_values<T>(kN, 21, -30, 30);
      constexpr T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
      v.insert(v.end(), {T(0), T(-0.0), inf, -inf, nan, T(1000), T(-1000), T(4)});
      const Tensor a = from_vector(v, {static_cast<std::int64_t>(v.size())});
      expect_close(sqrt(abs(a)).template to_vector<T>(), reference(v, [](T x) { return std::sqrt(std::fabs(x)); }),
                   "sqrt(abs)");
      expect_close(tanh(a).template to_vector<T>(), reference(v, [](T x) { return std::tanh(x); }), "tanh");
      expect_close(sigmoid(a).template to_vector<T>(),
                   reference(v, [](T x) { return T(1) / (T(1) + std::exp(-x)); }), "sigmoid");
      const std::vector<T> s = sigmoid(a).template to_vector<T>();
      for (std::size_t i = 0; i < s.size(); ++i) {
        if (!std::isnan(v[i])) {
          EXPECT_TRUE(s[i] >= 0 && s[i] <= 1) << v[i];  // never NaN at the extremes
        }
      }
      expect_close(sqrt(a).template to_vector<T>(), reference(v, [](T x) { return std::sqrt(x); }), "sqrt (NaN below 0)");
      const std::vector<T> ab = abs(a).template to_vector<T>();
      EXPECT_FALSE(std::signbit(ab[kN + 1]));  // |-0| is +0
    }
  });
}

TEST_P(MathOpsTest, PowWithTensorAndScalarExponents) {
  for_each_numeric_dtype([&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      SCOPED_TRACE(dtype_name(dtype_v<T>));
      const std::vector<T> base = random_values<T>(kN, 22, -4, 4), ex = random_values<T>(kN, 23, -3, 3);
      const Shape sh{static_cast<std::int64_t>(kN)};
      const Tensor a = from_vector(base, sh), b = from_vector(ex, sh);
      std::vector<double> want;
      for (std::size_t i = 0; i < kN; ++i) want.push_back(std::pow(base[i], ex[i]));  // NaN for a negative base
      expect_close(pow(a, b).template to_vector<T>(), want, "pow");
      expect_close(pow(a, 2.0).template to_vector<T>(), reference(base, [](T x) { return std::pow(x, T(2)); }),
                   "pow 2");
      expect_close(pow(a, -1.5).template to_vector<T>(), reference(base, [](T x) { return std::pow(x, T(-1.5)); }),
                   "pow -1.5");
      expect_close(rpow(a, 3.0).template to_vector<T>(), reference(base, [](T x) { return std::pow(T(3), x); }),
                   "rpow");
      // Broadcast: each row to its own power.
      const Tensor m = from_vector(std::vector<T>{1, 2, 3, 4, 5, 6}, {2, 3});
      const Tensor e = from_vector(std::vector<T>{2, 0.5}, {2, 1});
      expect_close(pow(m, e).template to_vector<T>(),
                   {1, 4, 9, std::sqrt(4.0), std::sqrt(5.0), std::sqrt(6.0)}, "pow broadcast");
    }
  });
}

TEST_P(MathOpsTest, ComparisonsGiveBoolTensors) {
  for_each_numeric_dtype([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    const Tensor a = from_vector(std::vector<T>{1, 2, 3, 4}, {4}), b = from_vector(std::vector<T>{4, 2, 1, 4}, {4});
    EXPECT_EQ(gt(a, b).dtype(), DType::b8);
    EXPECT_EQ(gt(a, 2.0).dtype(), DType::b8);
    EXPECT_EQ(gt(a, 2.0).template to_vector<bool>(), (std::vector<bool>{false, false, true, true}));
    EXPECT_EQ(gt(a, b).template to_vector<T>(), (std::vector<T>{0, 0, 1, 0}));
    EXPECT_EQ(ge(a, b).template to_vector<T>(), (std::vector<T>{0, 1, 1, 1}));
    EXPECT_EQ(lt(a, b).template to_vector<T>(), (std::vector<T>{1, 0, 0, 0}));
    EXPECT_EQ(le(a, b).template to_vector<T>(), (std::vector<T>{1, 1, 0, 1}));
    EXPECT_EQ(ne(a, b).template to_vector<T>(), (std::vector<T>{1, 0, 1, 0}));
    EXPECT_EQ(gt(a, 2.0).template to_vector<T>(), (std::vector<T>{0, 0, 1, 1}));
    EXPECT_EQ(le(a, 2.0).template to_vector<T>(), (std::vector<T>{1, 1, 0, 0}));
    EXPECT_EQ(eq(a, 4.0).template to_vector<T>(), (std::vector<T>{0, 0, 0, 1}));
    EXPECT_EQ(ne(a, 4.0).template to_vector<T>(), (std::vector<T>{1, 1, 1, 0}));
    // Broadcast, as the arithmetic ops.
    EXPECT_EQ(lt(reshape(a, {4, 1}), from_vector(std::vector<T>{2, 3}, {2})).template to_vector<T>(),
              (std::vector<T>{1, 1, 0, 1, 0, 0, 0, 0}));
    if constexpr (std::is_floating_point_v<T>) {
      const T nan = std::numeric_limits<T>::quiet_NaN();
      const Tensor n = from_vector(std::vector<T>{nan, 1}, {2}), one = from_vector(std::vector<T>{1, nan}, {2});
      for (const Tensor& r : {gt(n, one), ge(n, one), lt(n, one), le(n, one), eq(n, one)})
        EXPECT_EQ(r.template to_vector<T>(), (std::vector<T>{0, 0}));
      EXPECT_EQ(ne(n, one).template to_vector<T>(), (std::vector<T>{1, 1}));
    } else {
      // abs of the minimum wraps to itself, as neg does.
      constexpr T lo = std::numeric_limits<T>::min();
      EXPECT_EQ(abs(from_vector(std::vector<T>{lo, -7, 7, 0}, {4})).template to_vector<T>(),
                (std::vector<T>{lo, 7, 7, 0}));
    }
  });
}

TEST_P(MathOpsTest, MaximumMinimumAndClamp) {
  for_each_numeric_dtype([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    const Tensor a = from_vector(std::vector<T>{-3, 5, 2, 0}, {4}), b = from_vector(std::vector<T>{1, 1, 2, -1}, {4});
    EXPECT_EQ(maximum(a, b).template to_vector<T>(), (std::vector<T>{1, 5, 2, 0}));
    EXPECT_EQ(minimum(a, b).template to_vector<T>(), (std::vector<T>{-3, 1, 2, -1}));
    EXPECT_EQ(maximum(a, 1.0).template to_vector<T>(), (std::vector<T>{1, 5, 2, 1}));
    EXPECT_EQ(minimum(a, 1.0).template to_vector<T>(), (std::vector<T>{-3, 1, 1, 0}));
    EXPECT_EQ(clamp(a, -1.0, 2.0).template to_vector<T>(), (std::vector<T>{-1, 2, 2, 0}));
    EXPECT_EQ(clamp(a, {}, 0.0).template to_vector<T>(), (std::vector<T>{-3, 0, 0, 0}));
    EXPECT_EQ(clamp(a, 0.0, {}).template to_vector<T>(), (std::vector<T>{0, 5, 2, 0}));
    if constexpr (std::is_floating_point_v<T>) {
      const T nan = std::numeric_limits<T>::quiet_NaN();
      const Tensor n = from_vector(std::vector<T>{nan, 1, nan}, {3}), m = from_vector(std::vector<T>{0, nan, nan}, {3});
      for (const Tensor& r : {maximum(n, m), minimum(n, m), maximum(m, n)})
        for (T v : r.template to_vector<T>()) EXPECT_TRUE(std::isnan(v));
      const std::vector<T> c = clamp(n, 0.0, 0.5).template to_vector<T>();
      EXPECT_TRUE(std::isnan(c[0]));
      EXPECT_EQ(c[1], T(0.5));
    }
  });
  // The gradient: to the winner, half each on a tie; clamp's where kept.
  Tensor x = from_vector(std::vector<double>{-2, 0.5, 1, 3}, {4}).set_requires_grad();
  Tensor y = from_vector(std::vector<double>{1, 1, 1, 1}, {4}).set_requires_grad();
  backward(sum(maximum(x, y)));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 0.5, 1}));
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{1, 1, 0.5, 0}));
  Tensor z = from_vector(std::vector<double>{-2, -1, 0, 1, 2}, {5}).set_requires_grad();
  backward(sum(clamp(z, -1.0, 1.0)));
  EXPECT_EQ(z.grad().to_vector<double>(), (std::vector<double>{0, 1, 1, 1, 0}));
  const Tensor f = ones({2});
  eng().wait_all();
  EXPECT_REJECTED(ValueError, clamp(f, 1.0, 0.0));
  EXPECT_REJECTED(ValueError, clamp(f, {}, {}));
}

TEST_P(MathOpsTest, IntegersCompareWithTheScalarsRealValue) {
  for (DType dt : {DType::i32, DType::i64}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor a = to_dtype(from_vector(std::vector<double>{-3, -2, 2, 3}, {4}), dt);
    auto v = [](const Tensor& t) { return t.to_vector<std::int64_t>(); };
    using V = std::vector<std::int64_t>;
    EXPECT_EQ(v(gt(a, 2.5)), (V{0, 0, 0, 1}));
    EXPECT_EQ(v(ge(a, 2.5)), (V{0, 0, 0, 1}));
    EXPECT_EQ(v(lt(a, 2.5)), (V{1, 1, 1, 0}));
    EXPECT_EQ(v(le(a, 2.5)), (V{1, 1, 1, 0}));
    EXPECT_EQ(v(le(a, -2.5)), (V{1, 0, 0, 0}));
    EXPECT_EQ(v(gt(a, -2.5)), (V{0, 1, 1, 1}));
    EXPECT_EQ(v(eq(a, 2.5)), (V{0, 0, 0, 0}));
    EXPECT_EQ(v(ne(a, 2.5)), (V{1, 1, 1, 1}));
    EXPECT_EQ(v(eq(a, 2.0)), (V{0, 0, 1, 0}));
    EXPECT_EQ(v(gt(a, 1e300)), (V{0, 0, 0, 0}));  // beyond the dtype: constant
    EXPECT_EQ(v(lt(a, 1e300)), (V{1, 1, 1, 1}));
    EXPECT_EQ(v(ge(a, -1e300)), (V{1, 1, 1, 1}));
    EXPECT_EQ(v(le(a, -1e300)), (V{0, 0, 0, 0}));
    EXPECT_EQ(v(gt(a, std::nan(""))), (V{0, 0, 0, 0}));
    EXPECT_EQ(v(ne(a, std::nan(""))), (V{1, 1, 1, 1}));
    EXPECT_EQ(gt(a, 2.5).dtype(), DType::b8);
    EXPECT_EQ(gt(a, 1e300).dtype(), DType::b8);  // the constant too
    EXPECT_EQ(v(clamp(a, -2.0, 2.0)), (V{-2, -2, 2, 2}));
    eng().wait_all();
    EXPECT_REJECTED(ValueError, clamp(a, 0.5, 2.0));
    EXPECT_REJECTED(ValueError, maximum(a, 0.5));
  }
}

TEST_P(MathOpsTest, PowGradientsAreZeroWhereTheFunctionIsFlat) {
  // torch's values at the edges: d(0^0)/da = 0, d(a^b)/db = 0 at a = 0,
  // d(a^0)/da = 0, d(0^a)/da = 0 for a > 0 (not 0 * inf = NaN).
  Tensor a = from_vector(std::vector<double>{0, 0, 2}, {3}).set_requires_grad();
  Tensor b = from_vector(std::vector<double>{0, 2, 3}, {3}).set_requires_grad();
  backward(sum(pow(a, b)));
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{0, 0, 12}));
  EXPECT_EQ(b.grad().to_vector<double>()[0], 0.0);
  EXPECT_EQ(b.grad().to_vector<double>()[1], 0.0);
  EXPECT_NEAR(b.grad().to_vector<double>()[2], 8 * std::log(2.0), 1e-12);
  Tensor x = from_vector(std::vector<double>{0, 1.5}, {2}).set_requires_grad();
  backward(sum(pow(x, 0.0)) + sum(rpow(x, 0.0)));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0}));
}

TEST_P(MathOpsTest, FloatingOnlyOpsRefuseIntegersBeforeAnythingIsQueued) {
  const Tensor i = from_vector(std::vector<std::int32_t>{1, 2}, {2});
  const Tensor l = from_vector(std::vector<std::int64_t>{1, 2}, {2});
  const Tensor three = ones({3}), two = ones({2});
  eng().wait_all();
  EXPECT_REJECTED(DTypeError, pow(i, i));
  EXPECT_REJECTED(DTypeError, pow(l, 2.0));
  EXPECT_REJECTED(DTypeError, rpow(i, 2.0));
  EXPECT_REJECTED(DTypeError, sqrt(i));
  EXPECT_REJECTED(DTypeError, tanh(l));
  EXPECT_REJECTED(DTypeError, sigmoid(i));
  EXPECT_REJECTED(DTypeError, gt(i, l));
  EXPECT_REJECTED(ShapeError, lt(three, two));
}

TEST_P(MathOpsTest, ComparisonResultsNeedNoGradient) {
  Tensor x = from_vector(std::vector<double>{-1, 2}, {2}).set_requires_grad();
  EXPECT_FALSE(gt(x, 0.0).requires_grad());
  EXPECT_FALSE(lt(x, x).requires_grad());
  EXPECT_TRUE(pow(x, 2.0).requires_grad());
  EXPECT_TRUE(abs(x).requires_grad());
}

}  // namespace
}  // namespace tide::testing
