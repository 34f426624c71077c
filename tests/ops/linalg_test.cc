// matmul against a naive triple loop.
#include <cmath>

#include "ops_test_util.h"

namespace tide::testing {
namespace {

using LinalgTest = OpsTest;
TIDE_OPS_TEST_SUITE(LinalgTest);

/// c[m, n] = a[m, k] b[k, n], accumulated in double in k order (int64 for i32).
template <typename T>
std::vector<double> naive_matmul(const std::vector<T>& a, const std::vector<T>& b, std::int64_t m,
                                 std::int64_t k, std::int64_t n) {
  std::vector<double> c(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t p = 0; p < k; ++p)
        acc += static_cast<double>(a[static_cast<std::size_t>(i * k + p)]) *
               static_cast<double>(b[static_cast<std::size_t>(p * n + j)]);
      c[static_cast<std::size_t>(i * n + j)] = acc;
    }
  return c;
}

/// |got - want| <= rel * sum_p |a_ip b_pj|: the error bound of a dot product
/// in any summation order scales with the sum of the magnitudes, not the
/// (possibly cancelling) result.
template <typename T>
void expect_close(const std::vector<T>& got, const std::vector<T>& a, const std::vector<T>& b,
                  std::int64_t m, std::int64_t k, std::int64_t n, double rel) {
  std::vector<double> want = naive_matmul(a, b, m, k, n);
  std::vector<T> abs_a(a.size()), abs_b(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) abs_a[i] = std::abs(a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) abs_b[i] = std::abs(b[i]);
  std::vector<double> scale = naive_matmul(abs_a, abs_b, m, k, n);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * scale[i]) << "element " << i;
}

TEST_P(LinalgTest, F64AgainstTripleLoop) {
  const std::int64_t m = 67, k = 45, n = 31;
  std::vector<double> av = random_values<double>(m * k, 30), bv = random_values<double>(k * n, 31);
  Tensor c = matmul(from_vector(av, Shape{m, k}), from_vector(bv, Shape{k, n}));
  EXPECT_EQ(c.shape(), (Shape{m, n}));
  EXPECT_EQ(c.dtype(), DType::f64);
  // k = 45 products, each rounding error ~1e-16 relative to the magnitude
  // sum: 1e-12 leaves a wide margin for BLAS's blocked order.
  expect_close(c.to_vector<double>(), av, bv, m, k, n, 1e-12);
}

TEST_P(LinalgTest, F32AgainstTripleLoop) {
  const std::int64_t m = 33, k = 70, n = 19;
  std::vector<float> av = random_values<float>(m * k, 32), bv = random_values<float>(k * n, 33);
  Tensor c = matmul(from_vector(av, Shape{m, k}, cpu(1)), from_vector(bv, Shape{k, n}, cpu(1)));
  EXPECT_EQ(c.device(), cpu(1));
  // Accumulation in f32 (epsilon 1.2e-7) over k = 70 terms: 1e-5 relative
  // to the magnitude sum is k * epsilon with room to spare.
  expect_close(c.to_vector<float>(), av, bv, m, k, n, 1e-5);
}

TEST_P(LinalgTest, I32IsExact) {
  const std::int64_t m = 9, k = 14, n = 5;
  std::vector<std::int32_t> av = random_values<std::int32_t>(m * k, 34, -50, 50);
  std::vector<std::int32_t> bv = random_values<std::int32_t>(k * n, 35, -50, 50);
  std::vector<std::int32_t> got =
      matmul(from_vector(av, Shape{m, k}), from_vector(bv, Shape{k, n})).to_vector<std::int32_t>();
  std::vector<double> want = naive_matmul(av, bv, m, k, n);  // small integers: exact in double
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<std::int32_t>(want[i]));
}

TEST_P(LinalgTest, EmptyDimensions) {
  for (DType dt : {DType::f32, DType::f64, DType::i32}) {
    SCOPED_TRACE(dtype_name(dt));
    // k = 0: an empty sum in every element.
    Tensor c = matmul(ones({3, 0}, {dt}), ones({0, 4}, {dt}));
    EXPECT_EQ(c.shape(), (Shape{3, 4}));
    EXPECT_EQ(c.to_vector<double>(), std::vector<double>(12, 0.0));
    EXPECT_EQ(matmul(ones({0, 2}, {dt}), ones({2, 4}, {dt})).shape(), (Shape{0, 4}));
    EXPECT_EQ(matmul(ones({3, 2}, {dt}), ones({2, 0}, {dt})).shape(), (Shape{3, 0}));
  }
  Tensor one = matmul(full({1, 1}, 3.0), full({1, 1}, -2.0));
  EXPECT_EQ(one.item<float>(), -6.0f);
}

TEST_P(LinalgTest, BadInputThrowsAndEnqueuesNothing) {
  Tensor a = ones({2, 3}), b = ones({4, 5}), v = ones({3});
  Tensor d = ones({3, 2}, {DType::f64}), other_dev = ones({3, 2}, {DType::f32, cpu(1)});
  Tensor cube = ones({2, 3, 4}), square = ones({4, 2}), undefined;
  eng().wait_all();
  EXPECT_REJECTED(ShapeError, matmul(a, b));
  EXPECT_REJECTED(ShapeError, matmul(a, v));
  EXPECT_REJECTED(ShapeError, matmul(cube, square));
  EXPECT_REJECTED(DTypeError, matmul(a, d));
  EXPECT_REJECTED(DeviceError, matmul(a, other_dev));
  EXPECT_REJECTED(UndefinedTensorError, matmul(undefined, a));
  try {
    matmul(a, b);
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4, 5]"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace tide::testing
