// Broadcasting binary ops on the GPU against the CPU backend (itself checked
// against a reference in broadcast_test.cc): every op and dtype over every
// shape pair of broadcast_cases.h, in place, and a result large enough for
// the grid-stride loop to run more than one grid.
#include <functional>
#include <utility>

#include "broadcast_cases.h"
#include "cuda_ops_test_util.h"

namespace tide::testing {
namespace {

using CudaBroadcastTest = ::testing::TestWithParam<EngineKind>;
TIDE_OPS_TEST_SUITE(CudaBroadcastTest);

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
const std::vector<std::pair<const char*, BinaryFn>> kOps = {
    {"add", [](const Tensor& x, const Tensor& y) { return add(x, y); }},
    {"sub", [](const Tensor& x, const Tensor& y) { return sub(x, y); }},
    {"mul", [](const Tensor& x, const Tensor& y) { return mul(x, y); }},
    {"div", [](const Tensor& x, const Tensor& y) { return div(x, y); }},
    {"eq", [](const Tensor& x, const Tensor& y) { return eq(x, y); }},
};

/// Values in [-50, 50] without zero (the CPU refuses an i32 zero divisor).
template <typename T>
std::vector<T> operand(std::int64_t n, std::uint32_t seed) {
  std::vector<T> v = random_values<T>(static_cast<std::size_t>(n), seed, -50, 50);
  for (auto& x : v) x = x == 0 ? T(7) : x;
  return v;
}

template <typename T>
void expect_pair_matches_cpu(const Shape& as, const Shape& bs) {
  const std::vector<T> av = operand<T>(as.numel(), 5), bv = operand<T>(bs.numel(), 6);
  Tensor ca = from_vector(av, as), cb = from_vector(bv, bs);
  Tensor ga = to_gpu(av, as), gb = to_gpu(bv, bs);
  for (const auto& [name, fn] : kOps) {
    Tensor g = fn(ga, gb);
    EXPECT_EQ(g.device(), cuda(0));
    EXPECT_EQ(g.shape(), reference_shape(as, bs));
    expect_exact(g.to_vector<T>(), values<T>(fn(ca, cb)),
                 std::string(name) + " " + as.str() + " with " + bs.str() + " " + dtype_name(dtype_v<T>));
  }
}

TEST_P(CudaBroadcastTest, EveryShapePairMatchesCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for (const auto& [as, bs] : kBroadcastPairs) {
    for_each_dtype_of([&](auto tag) {
      using T = decltype(tag);
      expect_pair_matches_cpu<T>(as, bs);
      expect_pair_matches_cpu<T>(bs, as);
    });
  }
}

TEST_P(CudaBroadcastTest, LargeResultsMatchCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  // 2^24 + ... elements: more than one grid of the capped launch.
  expect_pair_matches_cpu<float>({4099, 4097}, {4097});
  expect_pair_matches_cpu<double>({4099, 1, 4097}, {4099, 1, 1});
  expect_pair_matches_cpu<std::int32_t>({3, 4099, 1367}, {3, 1, 1367});
}

TEST_P(CudaBroadcastTest, InPlaceMatchesCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  const Shape as{33, 129};
  for (const Shape& bs : {Shape{129}, Shape{33, 1}, Shape{}}) {
    const std::vector<float> av = operand<float>(as.numel(), 7), bv = operand<float>(bs.numel(), 8);
    Tensor ca = from_vector(av, as), cb = from_vector(bv, bs);
    Tensor ga = to_gpu(av, as), gb = to_gpu(bv, bs);
    add_(ca, cb);
    mul_(ca, cb);
    sub_(ca, cb);
    add_(ga, gb);
    mul_(ga, gb);
    sub_(ga, gb);
    EXPECT_EQ(ga.shape(), as);
    expect_exact(ga.to_vector<float>(), ca.to_vector<float>(), "in place with " + bs.str());
  }
}

/// Rows and columns over matrices whose rows are a whole number of packs
/// (the packed kernel, both operand orders, every numeric dtype, whole and
/// partial tiles), in place, the same operands from slices off a 16-byte
/// boundary (the element kernel), and an aligned matrix with an unaligned
/// row or column: each gives the CPU's values.
TEST_P(CudaBroadcastTest, PackedRowsAndColumnsMatchCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for_each_numeric_dtype([&](auto tag) {
    using T = decltype(tag);
    for (const auto& [as, bs] : {std::pair<Shape, Shape>{{64, 256}, {256}}, {{64, 256}, {64, 1}},
                                 {{1000, 1024}, {1024}}, {{1000, 1024}, {1000, 1}}, {{1000, 1028}, {1028}},
                                 {{1000, 1028}, {1000, 1}}}) {
      expect_pair_matches_cpu<T>(as, bs);
      expect_pair_matches_cpu<T>(bs, as);
      // In place into the whole matrix.
      const std::vector<T> av = operand<T>(as.numel(), 9), bv = operand<T>(bs.numel(), 10);
      Tensor ca = from_vector(av, as), cb = from_vector(bv, bs);
      Tensor ga = to_gpu(av, as), gb = to_gpu(bv, bs);
      add_(ca, cb);
      mul_(ca, cb);
      add_(ga, gb);
      mul_(ga, gb);
      expect_exact(values<T>(ga), values<T>(ca), "in place " + as.str() + " with " + bs.str());
      // Each operand from element 1 of a longer buffer: off a 16-byte boundary.
      const std::vector<T> av1 = operand<T>(as.numel() + 1, 11), bv1 = operand<T>(bs.numel() + 1, 12);
      auto from1 = [](const Tensor& t, const Shape& shape) {
        return reshape(slice(t, 0, 1, shape.numel() + 1), std::vector<std::int64_t>(shape.begin(), shape.end()));
      };
      const Tensor ha = from1(from_vector(av1), as), hb = from1(from_vector(bv1), bs);
      const Tensor da = from1(to_gpu(av1), as), db = from1(to_gpu(bv1), bs);
      expect_exact(values<T>(add(da, db)), values<T>(add(ha, hb)),
                   "add from unaligned slices " + as.str() + " with " + bs.str());
      expect_exact(values<T>(sub(db, da)), values<T>(sub(hb, ha)),
                   "sub from unaligned slices " + bs.str() + " with " + as.str());
      // An aligned matrix with an unaligned row (the element kernel) or
      // column (packed: a column's element is read alone).
      expect_exact(values<T>(mul(to_gpu(av, as), db)), values<T>(mul(from_vector(av, as), hb)),
                   "aligned " + as.str() + " with unaligned " + bs.str());
    }
  });
}

}  // namespace
}  // namespace tide::testing
