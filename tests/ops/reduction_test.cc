// Reductions against sequential references. The kernels accumulate in
// double (f32, f64) or int64 (i32) in index order along the reduced axis and
// round once at the end; the references below do exactly the same, so
// results compare exactly (that is the determinism the header promises).
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops_test_util.h"

namespace tide::testing {
namespace {

using ReductionTest = OpsTest;
TIDE_OPS_TEST_SUITE(ReductionTest);

template <typename T>
using Acc = std::conditional_t<std::is_integral_v<T>, std::int64_t, double>;

enum class Red { sum, mean, max, min };

/// Reference reduction of `v` (row-major, shape `s`) along `axis`.
template <typename T>
std::vector<T> reference(const std::vector<T>& v, const Shape& s, int axis, Red r) {
  std::int64_t outer = 1, inner = 1, len = s[axis];
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (int d = axis + 1; d < s.ndim(); ++d) inner *= s[d];
  std::vector<T> out;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t j = 0; j < inner; ++j) {
      Acc<T> acc = 0;
      T best = v[static_cast<std::size_t>(o * len * inner + j)];
      for (std::int64_t k = 0; k < len; ++k) {
        T x = v[static_cast<std::size_t>((o * len + k) * inner + j)];
        acc += x;
        best = r == Red::min ? std::min(best, x) : std::max(best, x);
      }
      if (r == Red::sum) out.push_back(static_cast<T>(acc));
      else if (r == Red::mean) out.push_back(static_cast<T>(static_cast<double>(acc) / static_cast<double>(len)));
      else out.push_back(best);
    }
  }
  return out;
}

TEST_P(ReductionTest, AllElements) {
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    const Shape shape{4, 5, 6};
    std::vector<T> v = random_values<T>(120, 20, -100, 100);
    Tensor a = from_vector(v, shape);
    const Shape flat{120};
    Tensor s = sum(a), m = max(a);
    EXPECT_EQ(s.shape(), Shape{});
    EXPECT_EQ(s.dtype(), dtype_v<T>);
    EXPECT_EQ(s.item<T>(), reference(v, flat, 0, Red::sum)[0]);
    EXPECT_EQ(m.item<T>(), reference(v, flat, 0, Red::max)[0]);
    EXPECT_EQ(min(a).item<T>(), reference(v, flat, 0, Red::min)[0]);
    EXPECT_EQ(min(a).dtype(), dtype_v<T>);
    if constexpr (std::is_floating_point_v<T>) {
      EXPECT_EQ(mean(a).item<T>(), reference(v, flat, 0, Red::mean)[0]);
    }
  });
}

TEST_P(ReductionTest, AlongEachAxis) {
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    const Shape shape{4, 5, 6};
    std::vector<T> v = random_values<T>(120, 21, -100, 100);
    Tensor a = from_vector(v, shape, cpu(1));
    for (int axis = -3; axis < 3; ++axis) {
      SCOPED_TRACE("axis " + std::to_string(axis));
      const int ax = axis < 0 ? axis + 3 : axis;
      Tensor s = sum(a, axis);
      EXPECT_EQ(s.shape(), shape.without(ax));
      EXPECT_EQ(s.device(), cpu(1));
      EXPECT_EQ(s.to_vector<T>(), reference(v, shape, ax, Red::sum));
      EXPECT_EQ(max(a, axis).to_vector<T>(), reference(v, shape, ax, Red::max));
      EXPECT_EQ(min(a, axis).to_vector<T>(), reference(v, shape, ax, Red::min));
      if constexpr (std::is_floating_point_v<T>) {
        EXPECT_EQ(mean(a, axis).to_vector<T>(), reference(v, shape, ax, Red::mean));
      }
    }
  });
}

TEST_P(ReductionTest, EdgeCases) {
  // Sums of nothing are zero; a 0-d tensor reduces to itself.
  EXPECT_EQ(sum(zeros({0})).item<float>(), 0.0f);
  EXPECT_EQ(sum(zeros({3, 0}), 1).to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(max(zeros({0, 3}), 1).shape(), (Shape{0}));
  EXPECT_EQ(sum(full(Shape{}, 3.0)).item<float>(), 3.0f);
  EXPECT_EQ(max(full(Shape{}, -3.0, {DType::i32})).item<std::int32_t>(), -3);

  // i32 sums accumulate in int64: the partial sum 4e9 does not overflow.
  Tensor big = from_vector(std::vector<std::int32_t>{2000000000, 2000000000, -2000000000});
  EXPECT_EQ(sum(big).item<std::int32_t>(), 2000000000);

  // A NaN wins max wherever it is.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(max(from_vector(std::vector<float>{1, nan, 3})).item<float>()));
  EXPECT_TRUE(std::isnan(max(from_vector(std::vector<float>{nan, 5, 3})).item<float>()));
  EXPECT_EQ(max(from_vector(std::vector<float>{-5, -2, -3})).item<float>(), -2.0f);
  EXPECT_TRUE(std::isnan(min(from_vector(std::vector<float>{1, nan, -3})).item<float>()));
  EXPECT_EQ(min(from_vector(std::vector<float>{5, 2, 3})).item<float>(), 2.0f);
  // The integers' ends: min of the smallest, argmin through ~a without a collision.
  constexpr std::int32_t lo = std::numeric_limits<std::int32_t>::min(), hi = std::numeric_limits<std::int32_t>::max();
  const Tensor ends = from_vector(std::vector<std::int32_t>{hi, lo, 0, lo}, {1, 4});
  EXPECT_EQ(min(ends).item<std::int32_t>(), lo);
  EXPECT_EQ(argmin(ends, 1).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1}));  // the first on ties
  EXPECT_EQ(argmin(from_vector(std::vector<float>{3, -1, nan, -1}, {1, 4}), 1).to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{2}));  // the first NaN, as argmax
  EXPECT_EQ(argmin(from_vector(std::vector<double>{3, -1, 4, -2, 0, 9}, {2, 3}), 0, DType::i32)
                .to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, 0, 0}));
}

TEST_P(ReductionTest, SumIsReproducible) {
  Tensor r = rand({100000}, {}, {5});
  float first = sum(r).item<float>();
  EXPECT_EQ(sum(r).item<float>(), first);
  std::vector<float> v = r.to_vector<float>();
  EXPECT_EQ(first, reference(v, Shape{100000}, 0, Red::sum)[0]);
}

TEST_P(ReductionTest, BadInputThrowsAndEnqueuesNothing) {
  Tensor a = ones({2, 3}), ia = ones({2, 3}, {DType::i32}), undefined;
  Tensor scalar = full(Shape{}, 1.0), empty = zeros({0}), empty_cols = zeros({2, 0});
  Tensor empty_rows = zeros({0, 2});
  eng().wait_all();
  EXPECT_REJECTED(ShapeError, sum(a, 2));
  EXPECT_REJECTED(ShapeError, max(a, -3));
  EXPECT_REJECTED(ShapeError, mean(a, 7));
  EXPECT_REJECTED(ShapeError, sum(scalar, 0));
  EXPECT_REJECTED(DTypeError, mean(ia));
  EXPECT_REJECTED(DTypeError, mean(ia, 0));
  EXPECT_REJECTED(ValueError, max(empty));
  EXPECT_REJECTED(ValueError, max(empty_cols, 1));
  EXPECT_REJECTED(ValueError, max(empty_rows, 0));
  EXPECT_REJECTED(UndefinedTensorError, sum(undefined));
  EXPECT_REJECTED(UndefinedTensorError, max(undefined, 0));
  try {
    sum(a, 2);
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tide::testing
