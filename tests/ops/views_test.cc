// Views share their base's storage (and its ordering); the copying layout
// ops (transpose, permute, slice, select, strided) against references
// computed here by index arithmetic.
#include <limits>
#include <numeric>
#include <string>

#include <tide/ops/views.h>

#include "ops_test_util.h"

namespace tide::testing {
namespace {

using ViewsTest = OpsTest;
TIDE_OPS_TEST_SUITE(ViewsTest);

std::vector<float> iota(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

TEST_P(ViewsTest, ReshapeAndFriendsShareTheStorage) {
  Tensor a = from_vector(iota(24), {2, 3, 4});
  Tensor r = reshape(a, {4, -1});
  EXPECT_EQ(r.shape(), (Shape{4, 6}));
  EXPECT_TRUE(r.is_same(a));
  EXPECT_EQ(r.to_vector<float>(), iota(24));
  EXPECT_EQ(flatten(a).shape(), Shape{24});
  EXPECT_EQ(unsqueeze(a, 0).shape(), (Shape{1, 2, 3, 4}));
  EXPECT_EQ(unsqueeze(a, -1).shape(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(unsqueeze(a, 1).shape(), (Shape{2, 1, 3, 4}));
  EXPECT_EQ(squeeze(unsqueeze(a, 2), 2).shape(), a.shape());
  EXPECT_EQ(squeeze(reshape(a, {1, 2, 1, 12, 1})).shape(), (Shape{2, 12}));
  EXPECT_EQ(reshape(ones({0, 3}), {-1, 3}).shape(), (Shape{0, 3}));
  EXPECT_EQ(reshape(ones({}), {1, 1}).shape(), (Shape{1, 1}));
}

TEST_P(ViewsTest, WritesThroughAViewAreOrderedWithTheBase) {
  // The view's in-place op and the base's reads share one storage, so the
  // engine orders them: the sum sees the add, the copy before it does not.
  Tensor a = zeros({4, 5});
  Tensor before = a + 0.0;
  Tensor row = reshape(a, {20});
  add_(row, 3.0);
  Tensor after = a * 2.0;
  EXPECT_EQ(before.to_vector<float>(), std::vector<float>(20, 0.0f));
  EXPECT_EQ(after.to_vector<float>(), std::vector<float>(20, 6.0f));
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(20, 3.0f));
}

TEST_P(ViewsTest, TransposeAndPermuteMatchIndexArithmetic) {
  Tensor m = from_vector(iota(12), {3, 4});
  Tensor t = transpose(m);
  EXPECT_EQ(t.shape(), (Shape{4, 3}));
  EXPECT_FALSE(t.is_same(m));
  std::vector<float> want;
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 3; ++i) want.push_back(static_cast<float>(i * 4 + j));
  EXPECT_EQ(t.to_vector<float>(), want);

  Tensor a = from_vector(iota(2 * 3 * 4 * 5), {2, 3, 4, 5});
  Tensor p = permute(a, {2, 0, 3, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 5, 3}));
  want.clear();
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int l = 0; l < 5; ++l)
        for (int j = 0; j < 3; ++j) want.push_back(static_cast<float>(((i * 3 + j) * 4 + k) * 5 + l));
  EXPECT_EQ(p.to_vector<float>(), want);
  EXPECT_EQ(transpose(transpose(a, 0, 3), 3, 0).to_vector<float>(), iota(120));
  EXPECT_EQ(permute(from_vector(std::vector<std::int32_t>{7}, Shape{}), {}).item<std::int32_t>(), 7);
}

TEST_P(ViewsTest, SliceFollowsPythonsRules) {
  const std::vector<float> v = iota(10);
  Tensor a = from_vector(v, {10});
  auto python_slice = [&](std::int64_t start, std::int64_t stop, std::int64_t step) {
    // Python's own algorithm (slice.indices), spelled out for the reference.
    const std::int64_t n = 10;
    auto fix = [&](std::int64_t x) {
      if (x < 0) x += n;
      if (step > 0) return x < 0 ? 0 : (x > n ? n : x);
      return x < -1 ? -1 : (x > n - 1 ? n - 1 : x);
    };
    std::vector<float> r;
    const std::int64_t b = fix(start), e = fix(stop);
    for (std::int64_t i = b; step > 0 ? i < e : i > e; i += step) r.push_back(v[static_cast<std::size_t>(i)]);
    return r;
  };
  for (std::int64_t step : {1, 2, 3, -1, -2, -4})
    for (std::int64_t start : {-12, -3, 0, 2, 9, 15})
      for (std::int64_t stop : {-12, -1, 0, 5, 10, 20}) {
        Tensor s = slice(a, 0, start, stop, step);
        EXPECT_EQ(s.to_vector<float>(), python_slice(start, stop, step))
            << "[" << start << ":" << stop << ":" << step << "]";
      }
  constexpr std::int64_t kBig = std::numeric_limits<std::int64_t>::max(), kSmall = std::numeric_limits<std::int64_t>::min();
  EXPECT_EQ(slice(a, 0, 0, 10, kBig).to_vector<float>(), std::vector<float>{0});  // numpy: one element
  EXPECT_EQ(slice(a, 0, 9, -20, kSmall).to_vector<float>(), std::vector<float>{9});
  EXPECT_EQ(slice(a, 0, kSmall, kBig, 4).to_vector<float>(), (std::vector<float>{0, 4, 8}));
  Tensor m = from_vector(iota(12), {3, 4});
  EXPECT_EQ(slice(m, 1, 1, 3).to_vector<float>(), (std::vector<float>{1, 2, 5, 6, 9, 10}));
  EXPECT_EQ(slice(m, 0, -1, -4, -2).to_vector<float>(), (std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3}));
  EXPECT_EQ(select(m, 1, -1).to_vector<float>(), (std::vector<float>{3, 7, 11}));
  EXPECT_EQ(select(m, 0, 1).shape(), Shape{4});
  EXPECT_EQ(select(from_vector(iota(3), {3}), 0, 2).shape(), Shape{});
}

TEST_P(ViewsTest, StridedReadsAnyWindowAndRefusesOnesOutside) {
  Tensor a = from_vector(iota(12), {12});
  EXPECT_EQ(strided(a, {2, 3}, {0, 2}, 1).to_vector<float>(), (std::vector<float>{1, 3, 5, 1, 3, 5}));
  EXPECT_EQ(strided(a, {3}, {-4}, 11).to_vector<float>(), (std::vector<float>{11, 7, 3}));
  EXPECT_EQ(strided(a, {3}, {5}, 1).to_vector<float>(), (std::vector<float>{1, 6, 11}));  // the last element
  EXPECT_EQ(strided(a, {0, 4}, {100, 1}, 50).numel(), 0);  // reaches nothing
}

TEST_P(ViewsTest, BadShapesAndAxesAreRefusedBeforeAnythingIsQueued) {
  Tensor a = from_vector(iota(12), {3, 4}), v = ones({5});
  eng().wait_all();
  EXPECT_REJECTED(ShapeError, reshape(a, {5, -1}));
  EXPECT_REJECTED(ShapeError, reshape(a, {-1, -1}));
  EXPECT_REJECTED(ShapeError, reshape(a, {2, 2}));
  EXPECT_REJECTED(ShapeError, reshape(a, {std::int64_t{1} << 40, std::int64_t{1} << 40, -1}));
  EXPECT_REJECTED(ShapeError, squeeze(a, 0));
  EXPECT_REJECTED(ShapeError, unsqueeze(a, 3));
  EXPECT_REJECTED(ShapeError, transpose(a, 0, 2));
  EXPECT_REJECTED(ShapeError, transpose(v));
  EXPECT_REJECTED(ShapeError, permute(a, {0, 0}));
  EXPECT_REJECTED(ShapeError, permute(a, {1}));
  EXPECT_REJECTED(ValueError, slice(a, 0, 0, 3, 0));
  EXPECT_REJECTED(ShapeError, select(a, 0, 3));
  EXPECT_REJECTED(ShapeError, select(a, 1, -5));
  EXPECT_REJECTED(ShapeError, strided(a, {3}, {5}, 3));
  EXPECT_REJECTED(ShapeError, strided(a, {2}, {-1}, 0));
  EXPECT_REJECTED(ShapeError, strided(a, {2}, {std::int64_t{1} << 62}, 0));
  EXPECT_REJECTED(ShapeError, strided(a, {2}, {1, 1}, 0));
  const std::string m = message_of<ShapeError>([&] { reshape(a, {5, 5}); });
  EXPECT_NE(m.find("reshape: shape [3, 4] (12 elements) cannot be viewed as [5, 5] (25)"), std::string::npos) << m;
}

}  // namespace
}  // namespace tide::testing
