// where(cond, a, b) on the CPU, both engines: values taken exactly (NaN,
// infinities, -0.0), cond of any dtype, broadcasting of all three, the
// scalar forms, refusals before anything is queued; and on a GPU, the same
// against the CPU (skipped without one).
#include <cmath>
#include <limits>
#include <string>

#include "cuda_ops_test_util.h"

namespace tide::testing {
namespace {

using WhereTest = OpsTest;
TIDE_OPS_TEST_SUITE(WhereTest);

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// The reference: row-major over `out`, each operand read through numpy's
/// broadcast (an axis of extent 1 or a missing leading one repeats).
template <typename C, typename T>
std::vector<T> reference(const std::vector<C>& c, const Shape& cs, const std::vector<T>& a, const Shape& as,
                         const std::vector<T>& b, const Shape& bs, const Shape& out) {
  auto at = [&](const Shape& s, const std::vector<std::int64_t>& index) {
    std::int64_t flat = 0;
    const int lead = out.ndim() - s.ndim();
    for (int d = 0; d < s.ndim(); ++d) flat = flat * s[d] + (s[d] == 1 ? 0 : index[static_cast<std::size_t>(d + lead)]);
    return static_cast<std::size_t>(flat);
  };
  std::vector<T> r;
  std::vector<std::int64_t> index(static_cast<std::size_t>(out.ndim()), 0);
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    std::int64_t rest = i;
    for (int d = out.ndim() - 1; d >= 0; --d) {
      index[static_cast<std::size_t>(d)] = rest % out[d];
      rest /= out[d];
    }
    r.push_back(c[at(cs, index)] != C(0) ? a[at(as, index)] : b[at(bs, index)]);
  }
  return r;
}

/// Equal as bits would be, NaN included (so -0.0 differs from 0.0).
template <typename T>
void expect_same_values(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      EXPECT_TRUE((std::isnan(got[i]) && std::isnan(want[i])) ||
                  (got[i] == want[i] && std::signbit(got[i]) == std::signbit(want[i])))
          << what << " at " << i << ": " << got[i] << " against " << want[i];
    } else {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
    }
  }
}

TEST_P(WhereTest, TakesEachValueExactlyAndCountsNanAsTrue) {
  const std::vector<float> c = {1, 0, -0.0f, static_cast<float>(kNaN), 2, -3};
  const std::vector<float> a = {static_cast<float>(kNaN), 1, 2, -0.0f, static_cast<float>(kInf), 5};
  const std::vector<float> b = {7, -0.0f, static_cast<float>(-kInf), 9, 10, static_cast<float>(kNaN)};
  const Tensor got = where(from_vector(c), from_vector(a), from_vector(b));
  EXPECT_EQ(got.shape(), Shape{6});
  // NaN and nonzero choose a; 0 and -0.0 choose b.
  expect_same_values(got.to_vector<float>(), {a[0], b[1], b[2], a[3], a[4], a[5]}, "f32");
}

TEST_P(WhereTest, CondOfAnotherDtypeChoosesAmongValuesOfEveryDtype) {
  const std::vector<std::int32_t> c = {0, 5, -1, 0};
  auto check = [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> a = {T(1), T(2), T(3), T(4)}, b = {T(-1), T(-2), T(-3), T(-4)};
    const Tensor got = where(from_vector(c), from_vector(a), from_vector(b));
    EXPECT_EQ(got.dtype(), dtype_v<T>);
    expect_same_values(got.to_vector<T>(), {T(-1), T(2), T(3), T(-4)}, dtype_name(dtype_v<T>));
  };
  check(float{});
  check(double{});
  check(std::int32_t{});
  check(std::int64_t{});
  // A comparison's 0/1 result as the condition, in the values' dtype.
  const Tensor x = from_vector(std::vector<double>{-2, 3, 0.5, -0.25});
  expect_same_values(where(gt(x, 0.0), x, 0.0).to_vector<double>(), {0, 3, 0.5, 0}, "relu by where");
}

TEST_P(WhereTest, BroadcastsAllThree) {
  struct Case {
    Shape c, a, b;
  };
  const Case cases[] = {
      {{3, 1}, {4}, {}},             // a column, a row, a scalar
      {{4}, {3, 4}, {3, 1}},         // the values stretch too
      {{2, 1, 4}, {3, 1}, {1, 3, 4}}, // three dimensions, each stretching another axis
      {{}, {2, 3}, {2, 3}},          // one condition for all
      {{0, 3}, {3}, {1}},            // empty
  };
  for (const Case& k : cases) {
    const Shape out = broadcast_shapes(broadcast_shapes(k.c, k.a), k.b);
    std::vector<double> c = random_values<double>(static_cast<std::size_t>(k.c.numel()), 3, -1, 1);
    for (std::size_t i = 0; i < c.size(); i += 3) c[i] = 0;
    const std::vector<float> a = random_values<float>(static_cast<std::size_t>(k.a.numel()), 4, -9, 9);
    const std::vector<float> b = random_values<float>(static_cast<std::size_t>(k.b.numel()), 5, -9, 9);
    const Tensor got = where(from_vector(c, k.c), from_vector(a, k.a), from_vector(b, k.b));
    const std::string what = k.c.str() + " " + k.a.str() + " " + k.b.str();
    EXPECT_EQ(got.shape(), out) << what;
    expect_same_values(got.to_vector<float>(), reference(c, k.c, a, k.a, b, k.b, out), what);
  }
}

TEST_P(WhereTest, ScalarValuesTakeTheOtherOperandsDtype) {
  const Tensor c = from_vector(std::vector<std::int32_t>{1, 0, 1});
  const Tensor a = from_vector(std::vector<std::int64_t>{10, 20, 30});
  const Tensor left = where(c, a, -1.0), right = where(c, 7.0, a);
  EXPECT_EQ(left.dtype(), DType::i64);
  EXPECT_EQ(left.to_vector<std::int64_t>(), (std::vector<std::int64_t>{10, -1, 30}));
  EXPECT_EQ(right.to_vector<std::int64_t>(), (std::vector<std::int64_t>{7, 20, 7}));
  EXPECT_THROW(where(c, a, 1e30), ValueError);  // does not fit an i64
}

TEST_P(WhereTest, BadArgumentsAreRefusedBeforeAnythingIsQueued) {
  const Tensor c = ones({3}), a = ones({3}), b = ones({3});
  const Tensor b64 = ones({3}, {DType::f64}), b4 = ones({4}), c21 = ones({2, 1}), a32 = ones({3, 2});
  const Tensor i32 = ones({3}, {DType::i32});
  const std::uint64_t before = current_engine().pushed();
  EXPECT_THROW(where(c, a, b64), DTypeError);
  EXPECT_THROW(where(c, a, b4), ShapeError);
  EXPECT_THROW(where(c21, a32, b), ShapeError);
  EXPECT_THROW(where(Tensor(), a, b), UndefinedTensorError);
  EXPECT_THROW(where(c, Tensor(), b), UndefinedTensorError);
  EXPECT_THROW(where(c, a, Tensor()), UndefinedTensorError);
  // The scalar forms check everything before their scalar becomes a tensor.
  EXPECT_THROW(where(Tensor(), a, 1.0), UndefinedTensorError);
  EXPECT_THROW(where(c, Tensor(), 1.0), UndefinedTensorError);
  EXPECT_THROW(where(Tensor(), 1.0, b), UndefinedTensorError);
  EXPECT_THROW(where(c21, a32, 1.0), ShapeError);
  EXPECT_THROW(where(c21, 1.0, a32), ShapeError);
  EXPECT_THROW(where(c, i32, 1e12), ValueError);
  EXPECT_EQ(current_engine().pushed(), before);
}

using CudaWhereTest = ::testing::TestWithParam<EngineKind>;
TIDE_OPS_TEST_SUITE(CudaWhereTest);

TEST_P(CudaWhereTest, MatchesCpuOverSizesDtypesAndBroadcasts) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for (std::int64_t n : kGpuSizes) {
    std::vector<float> c = random_values<float>(static_cast<std::size_t>(n), 6, -1, 1);
    for (std::size_t i = 0; i < c.size(); i += 4) c[i] = i % 8 ? 0.0f : static_cast<float>(kNaN);
    const std::vector<double> a = random_values<double>(static_cast<std::size_t>(n), 7, -9, 9);
    const std::vector<double> b = random_values<double>(static_cast<std::size_t>(n), 8, -9, 9);
    const Tensor want = where(from_vector(c), from_vector(a), from_vector(b));
    const Tensor got = where(to_gpu(c), to_gpu(a), to_gpu(b));
    EXPECT_EQ(got.device(), cuda(0));
    expect_exact(got.to_vector<double>(), want.to_vector<double>(), "n=" + std::to_string(n));
  }
  const std::vector<std::int64_t> c = {0, 1, 0};
  const std::vector<std::int32_t> a = {1, 2, 3, 4}, b = {-1, -2, -3};
  const Tensor want = where(from_vector(c, {3, 1}), from_vector(a, {4}), from_vector(b, {3, 1}));
  const Tensor got = where(to_gpu(c, {3, 1}), to_gpu(a, {4}), to_gpu(b, {3, 1}));
  EXPECT_EQ(got.shape(), (Shape{3, 4}));
  expect_exact(got.to_vector<std::int32_t>(), want.to_vector<std::int32_t>(), "broadcast i32 by i64");
}

}  // namespace
}  // namespace tide::testing
