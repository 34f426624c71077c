// Broadcasting binary ops on the CPU against the reference of
// broadcast_cases.h: every op and dtype over every shape pair, both operand
// orders, in place, and the shapes that must be refused.
#include <cmath>
#include <string>

#include <tide/ops/elementwise.h>

#include "broadcast_cases.h"
#include "ops_test_util.h"

namespace tide::testing {
namespace {

using BroadcastTest = OpsTest;
TIDE_OPS_TEST_SUITE(BroadcastTest);

/// Small integers (as T) in [-4, 4] with no zero (so i32 division is defined) and some
/// equal pairs (so eq finds matches).
template <typename T>
std::vector<T> operand(std::int64_t n, std::uint32_t seed) {
  std::vector<T> v = random_values<T>(static_cast<std::size_t>(n), seed, 1, 4);
  for (std::size_t i = 0; i < v.size(); i += 2) v[i] = -v[i];
  if constexpr (std::is_floating_point_v<T>)
    for (auto& x : v) x = std::round(x);  // small integers, so eq matches some pairs
  return v;
}

template <typename T>
void expect_op(const char* name, const Tensor& got, const std::vector<T>& av, const Shape& as,
               const std::vector<T>& bv, const Shape& bs, auto op) {
  SCOPED_TRACE(std::string(name) + " " + as.str() + " with " + bs.str() + " " + dtype_name(dtype_v<T>));
  EXPECT_EQ(got.shape(), reference_shape(as, bs));
  EXPECT_EQ(got.to_vector<T>(), reference_broadcast(av, as, bv, bs, op));
}

TEST_P(BroadcastTest, EveryOpMatchesTheReferenceOverEveryShapePair) {
  for (const auto& [as, bs] : kBroadcastPairs) {
    for (const auto& [xs, ys] : {std::pair{as, bs}, std::pair{bs, as}}) {
      for_each_dtype_of([&](auto tag) {
        using T = decltype(tag);
        const std::vector<T> av = operand<T>(xs.numel(), 1), bv = operand<T>(ys.numel(), 2);
        Tensor a = from_vector(av, xs), b = from_vector(bv, ys);
        expect_op<T>("add", add(a, b), av, xs, bv, ys, [](T x, T y) { return x + y; });
        expect_op<T>("sub", a - b, av, xs, bv, ys, [](T x, T y) { return x - y; });
        expect_op<T>("mul", mul(a, b), av, xs, bv, ys, [](T x, T y) { return x * y; });
        expect_op<T>("div", a / b, av, xs, bv, ys, [](T x, T y) { return x / y; });
        expect_op<T>("eq", eq(a, b), av, xs, bv, ys, [](T x, T y) { return x == y ? T(1) : T(0); });
      });
    }
  }
}

TEST_P(BroadcastTest, InPlaceTakesAnOperandThatBroadcastsToItsShape) {
  const Shape as{4, 5};
  for (const Shape& bs : {Shape{5}, Shape{4, 1}, Shape{1, 5}, Shape{}, Shape{1, 1, 4, 5}}) {
    if (bs.ndim() > as.ndim()) continue;  // checked below: the result would grow
    const std::vector<float> av = operand<float>(as.numel(), 3), bv = operand<float>(bs.numel(), 4);
    Tensor a = from_vector(av, as), b = from_vector(bv, bs);
    Tensor keep = a;
    add_(a, b);
    mul_(a, b);
    sub_(a, b);
    auto once = reference_broadcast(av, as, bv, bs, [](float x, float y) { return x + y; });
    once = reference_broadcast(once, as, bv, bs, [](float x, float y) { return x * y; });
    once = reference_broadcast(once, as, bv, bs, [](float x, float y) { return x - y; });
    EXPECT_EQ(a.shape(), as) << bs.str();
    EXPECT_TRUE(a.is_same(keep)) << "in place writes a's own storage";
    EXPECT_EQ(a.to_vector<float>(), once) << bs.str();
  }
}

TEST_P(BroadcastTest, ShapesThatDoNotBroadcastAreRefusedBeforeAnythingIsQueued) {
  Tensor a = ones({2, 3}), b = ones({4}), row = ones({3}), big = ones({4, 2, 3});
  eng().wait_all();
  EXPECT_REJECTED(ShapeError, add(a, b));
  EXPECT_REJECTED(ShapeError, eq(b, a));
  EXPECT_REJECTED(ShapeError, add_(row, a));  // the result [2, 3] is not row's shape
  EXPECT_REJECTED(ShapeError, mul_(a, big));
  const std::string m = message_of<ShapeError>([&] { add(a, b); });
  EXPECT_NE(m.find("add: shapes [2, 3] and [4] do not broadcast (axis -1: 3 against 4"), std::string::npos) << m;
  const std::string in_place = message_of<ShapeError>([&] { sub_(row, a); });
  EXPECT_NE(in_place.find("sub_: b of shape [2, 3] does not broadcast to a's shape [3]"), std::string::npos)
      << in_place;
  EXPECT_EQ(broadcast_shapes({8, 1, 6, 1}, {7, 1, 5}), (Shape{8, 7, 6, 5}));  // numpy's own example
  EXPECT_THROW(broadcast_shapes({3}, {4}), ShapeError);
}

TEST_P(BroadcastTest, ABroadcastResultOrdersLikeAnyOp) {
  // The bias is rewritten after the add is pushed: the add must read the old
  // value (WAR), and a later read of the sum must see the add (RAW).
  Tensor x = zeros({64, 10}), bias = full({10}, 2.0);
  Tensor y = x + bias;
  bias += 5.0;
  Tensor z = y + bias;
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(640, 2.0f));
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(640, 9.0f));
}

}  // namespace
}  // namespace tide::testing
