// cat and stack against index arithmetic, every dtype, with empty inputs
// and bad shapes; softmax and log_softmax against the formula. Their
// gradients are checked in autograd_cases.h.
#include <cmath>
#include <numeric>

#include <tide/ops/nn.h>
#include <tide/ops/views.h>

#include "ops_test_util.h"

namespace tide::testing {
namespace {

using CatTest = OpsTest;
TIDE_OPS_TEST_SUITE(CatTest);

template <typename T>
std::vector<T> iota_of(std::int64_t n, T from) {
  std::vector<T> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

template <typename T>
void check_cat_of() {
  const Tensor a = from_vector(iota_of<T>(6, T(0)), {2, 3});      // 0..5
  const Tensor b = from_vector(iota_of<T>(2, T(100)), {2, 1});    // 100, 101
  const Tensor c = from_vector(iota_of<T>(4, T(200)), {2, 2});    // 200..203
  EXPECT_EQ(cat({a, b, c}, 1).template to_vector<T>(),
            (std::vector<T>{0, 1, 2, 100, 200, 201, 3, 4, 5, 101, 202, 203}));
  EXPECT_EQ(cat({a, b, c}, -1).shape(), (Shape{2, 6}));
  const Tensor r = from_vector(iota_of<T>(3, T(9)), {1, 3});
  EXPECT_EQ(cat({a, r}, 0).template to_vector<T>(), (std::vector<T>{0, 1, 2, 3, 4, 5, 9, 10, 11}));
  EXPECT_EQ(cat({a}, 0).template to_vector<T>(), a.template to_vector<T>());  // a copy of its own
  EXPECT_FALSE(cat({a}, 0).is_same(a));
  // stack: a new axis, anywhere.
  const Tensor a2 = from_vector(iota_of<T>(6, T(10)), {2, 3});
  EXPECT_EQ(stack({a, a2}).shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(stack({a, a2}, 2).template to_vector<T>(),
            (std::vector<T>{0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15}));
  EXPECT_EQ(stack({a, a2}, -1).shape(), (Shape{2, 3, 2}));
}

TEST_P(CatTest, JoinsAlongAnyAxisInEveryDtype) {
  check_cat_of<float>();
  check_cat_of<double>();
  check_cat_of<std::int32_t>();
  check_cat_of<std::int64_t>();
}

TEST_P(CatTest, CopiesEveryValueExactly) {
  // -0 stays -0, NaN stays NaN, infinities stay.
  const double inf = INFINITY;
  const Tensor a = from_vector(std::vector<double>{-0.0, 0.0}, {2}), b = from_vector(std::vector<double>{NAN, -inf}, {2});
  const std::vector<double> c = cat({a, b}).to_vector<double>();
  EXPECT_TRUE(std::signbit(c[0]) && c[0] == 0.0);
  EXPECT_FALSE(std::signbit(c[1]));
  EXPECT_TRUE(std::isnan(c[2]));
  EXPECT_EQ(c[3], -inf);
}

TEST_P(CatTest, EmptyInputsAndResults) {
  const Tensor a = ones({2, 3}), none = ones({2, 0});
  EXPECT_EQ(cat({none, a, none}, 1).to_vector<float>(), std::vector<float>(6, 1.0f));
  EXPECT_EQ(cat({none, none}, 1).shape(), (Shape{2, 0}));
  EXPECT_EQ(cat({ones({0, 3}), ones({0, 3})}, 1).shape(), (Shape{0, 6}));
}

TEST_P(CatTest, BadInputIsRefusedBeforeAnythingIsQueued) {
  const Tensor a = ones({2, 3}), b = ones({3, 3}), c = ones({2, 3}, {DType::f64}), d = ones({6});
  eng().wait_all();
  EXPECT_REJECTED(ValueError, cat({}, 0));
  EXPECT_REJECTED(ShapeError, cat({a, b}, 1));  // rows differ
  EXPECT_REJECTED(ShapeError, cat({a, d}, 0));  // ranks differ
  EXPECT_REJECTED(ShapeError, cat({a, a}, 2));
  EXPECT_REJECTED(DTypeError, cat({a, c}, 0));
  EXPECT_REJECTED(UndefinedTensorError, cat({a, Tensor()}, 0));
  EXPECT_REJECTED(ShapeError, stack({a, b}));
  EXPECT_REJECTED(ShapeError, stack({a, a}, 3));
  EXPECT_REJECTED(ValueError, stack({}));
  const std::string m = message_of<ShapeError>([&] { cat({a, b}, 1); });
  EXPECT_NE(m.find("cat: tensors[1] has shape [3, 3], which differs from [2, 3] outside axis 1"), std::string::npos)
      << m;
}

TEST_P(CatTest, SoftmaxAndLogSoftmaxMatchTheFormula) {
  const std::vector<double> v = {1, 2, 3, -1, 0, 1000, 5, 5, 5};  // a large logit: no overflow
  const Tensor a = from_vector(v, {3, 3});
  const std::vector<double> s = softmax(a, 1).to_vector<double>(), l = log_softmax(a, -1).to_vector<double>();
  for (int r = 0; r < 3; ++r) {
    double m = -INFINITY, total = 0;
    for (int c = 0; c < 3; ++c) m = std::max(m, v[static_cast<std::size_t>(r * 3 + c)]);
    for (int c = 0; c < 3; ++c) total += std::exp(v[static_cast<std::size_t>(r * 3 + c)] - m);
    for (int c = 0; c < 3; ++c) {
      const auto i = static_cast<std::size_t>(r * 3 + c);
      EXPECT_NEAR(s[i], std::exp(v[i] - m) / total, 1e-15) << i;
      EXPECT_NEAR(l[i], v[i] - m - std::log(total), 1e-12) << i;
    }
  }
  EXPECT_TRUE(std::isfinite(l[3]));  // exp(-1001) underflows in softmax, not in log_softmax
  const std::vector<double> cols = softmax(a, 0).to_vector<double>();
  EXPECT_NEAR(cols[0] + cols[3] + cols[6], 1.0, 1e-15);
  const Tensor i = ones({2, 2}, {DType::i32});
  eng().wait_all();
  EXPECT_REJECTED(DTypeError, softmax(i, 0));
  EXPECT_REJECTED(ShapeError, log_softmax(a, 2));
}

}  // namespace
}  // namespace tide::testing
