// i64, the dtype of labels and indices that numpy and PyTorch default to:
// arithmetic that wraps, division and scalar checks, reductions, products,
// to_dtype's conversions (and their gradient), i64 labels; on a GPU the
// same ops against the CPU.
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include <tide/ops/autograd.h>

#include "cuda_ops_test_util.h"
#include "ops_test_util.h"

namespace tide::testing {
namespace {

using Int64Test = OpsTest;
TIDE_OPS_TEST_SUITE(Int64Test);

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

Tensor i64(const std::vector<std::int64_t>& v) { return from_vector(v); }
std::vector<std::int64_t> vals(const Tensor& t) { return t.to_vector<std::int64_t>(); }

TEST_P(Int64Test, ArithmeticWrapsAndDivisionTruncates) {
  const Tensor a = i64({kMax, kMin, 7, -7, 1LL << 40});
  const Tensor b = i64({1, -1, 2, 2, 1LL << 30});
  EXPECT_EQ(a.dtype(), DType::i64);
  EXPECT_EQ(vals(a + b), (std::vector<std::int64_t>{kMin, kMax, 9, -5, (1LL << 40) + (1LL << 30)}));
  EXPECT_EQ(vals(a * b), (std::vector<std::int64_t>{kMax, kMin, 14, -14, 0}));  // 2^70 wraps to 0
  EXPECT_EQ(vals(div(i64({7, -7, 9}), i64({2, 2, -4}))), (std::vector<std::int64_t>{3, -3, -2}));
  EXPECT_EQ(vals(-i64({kMin, 5})), (std::vector<std::int64_t>{kMin, -5}));
  EXPECT_EQ(vals(eq(a, a)), (std::vector<std::int64_t>{1, 1, 1, 1, 1}));
  // Scalars: truncated, checked against the range, 0 divisors refused.
  EXPECT_EQ(vals(i64({1}) + 4611686018427387904.0), (std::vector<std::int64_t>{(1LL << 62) + 1}));
  EXPECT_EQ(vals(full({2}, -9223372036854775808.0, {DType::i64})), (std::vector<std::int64_t>{kMin, kMin}));
  const Tensor one = i64({1});
  EXPECT_REJECTED(ValueError, one + 1e19);
  EXPECT_REJECTED(ValueError, one / 0.5);
  Tensor z = div(i64({1}), i64({0}));
  EXPECT_THROW(z.wait_to_read(), BackendError);
  Tensor o = div(i64({kMin}), i64({-1}));
  EXPECT_THROW(o.wait_to_read(), BackendError);
}

TEST_P(Int64Test, ReductionsProductsAndPrinting) {
  const Tensor a = from_vector(std::vector<std::int64_t>{kMax, 1, 3, -4, 5, 6}, {2, 3});
  EXPECT_EQ(sum(a).item<std::int64_t>(), kMin + 10);  // wraps around
  EXPECT_EQ(vals(sum(a, 0)), (std::vector<std::int64_t>{kMax - 4, 6, 9}));
  EXPECT_EQ(vals(max(a, 1)), (std::vector<std::int64_t>{kMax, 6}));
  EXPECT_EQ(argmax(a, 1).to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 2}));
  EXPECT_THROW(mean(a), DTypeError);
  const Tensor m = from_vector(std::vector<std::int64_t>{1LL << 33, 2, 3, 4}, {2, 2});
  // 2^33 * 2^33 = 2^66 wraps to 0.
  EXPECT_EQ(vals(matmul(m, m)), (std::vector<std::int64_t>{6, (1LL << 34) + 8, (3LL << 33) + 12, 22}));
  EXPECT_EQ(vals(matmul(m, m, true, false)), (std::vector<std::int64_t>{9, (1LL << 34) + 12, (1LL << 34) + 12, 20}));
  std::ostringstream os;
  os << i64({kMin, 2});
  EXPECT_NE(os.str().find("-9223372036854775808, 2]"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("dtype=i64"), std::string::npos) << os.str();
}

TEST_P(Int64Test, ToDtypeConvertsTruncatesAndSaturates) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor f = from_vector(std::vector<double>{2.9, -2.9, nan, 1e300, -1e300, 9.3e18});
  EXPECT_EQ(vals(to_dtype(f, DType::i64)), (std::vector<std::int64_t>{2, -2, 0, kMax, kMin, kMax}));
  EXPECT_EQ(to_dtype(f, DType::i32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{2, -2, 0, INT32_MAX, INT32_MIN, INT32_MAX}));
  EXPECT_EQ(to_dtype(i64({kMax, -5, kMin}), DType::i32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{INT32_MAX, -5, INT32_MIN}));
  EXPECT_EQ(vals(to_dtype(from_vector(std::vector<std::int32_t>{-3, 4}), DType::i64)),
            (std::vector<std::int64_t>{-3, 4}));
  EXPECT_EQ(to_dtype(i64({1LL << 53, -1}), DType::f64).to_vector<double>(), (std::vector<double>{9007199254740992.0, -1}));
  EXPECT_EQ(to_dtype(from_vector(std::vector<double>{0.1}), DType::f32).to_vector<float>(),
            (std::vector<float>{0.1f}));
  const Tensor same = i64({1});
  EXPECT_TRUE(to_dtype(same, DType::i64).is_same(same));
  EXPECT_REJECTED(DTypeError, to_dtype(same, static_cast<DType>(9)));
  // Differentiable between floating dtypes.
  Tensor x = from_vector(std::vector<float>{1, 2}).set_requires_grad();
  backward(sum(to_dtype(x, DType::f64) * 3.0));
  EXPECT_EQ(x.grad().dtype(), DType::f32);
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{3, 3}));
  EXPECT_FALSE(to_dtype(x, DType::i64).requires_grad());
}

TEST_P(Int64Test, I64LabelsGiveTheI32LabelsLoss) {
  const Tensor logits = from_vector(random_values<double>(12, 3), {4, 3});
  const std::vector<std::int32_t> y{0, 2, 1, 1};
  const auto a = softmax_cross_entropy(logits, from_vector(y));
  const auto b = softmax_cross_entropy(logits, i64({0, 2, 1, 1}));
  EXPECT_EQ(a.loss.item<double>(), b.loss.item<double>());
  EXPECT_EQ(softmax_cross_entropy_backward(a.probs, i64({0, 2, 1, 1})).to_vector<double>(),
            softmax_cross_entropy_backward(a.probs, from_vector(y)).to_vector<double>());
  // A label too wide for i32 saturates: still out of range, still refused by the kernel.
  const auto bad = softmax_cross_entropy(logits, i64({0, 1LL << 32, 1, 1}));
  EXPECT_THROW(bad.loss.wait_to_read(), BackendError);
  const Tensor floats = from_vector(std::vector<float>{0, 1, 2, 0});
  EXPECT_REJECTED(DTypeError, softmax_cross_entropy(logits, floats));
}

using CudaInt64Test = ::testing::TestWithParam<EngineKind>;
TIDE_OPS_TEST_SUITE(CudaInt64Test);

TEST_P(CudaInt64Test, OpsMatchTheCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  const std::vector<std::int64_t> v{kMax, kMin, 7, -7, 1LL << 40, 3, -1, 0, 12, 5, 8, -9};
  const Tensor c = from_vector(v, {3, 4}), g = copy_to(c, cuda(0));
  auto same = [&](auto op, const char* what) {
    const Tensor rc = op(c), rg = op(g);
    EXPECT_EQ(rg.device(), cuda(0)) << what;
    EXPECT_EQ(rg.dtype(), rc.dtype()) << what;
    EXPECT_EQ(rg.template to_vector<std::int64_t>(), rc.template to_vector<std::int64_t>()) << what;
  };
  same([](const Tensor& t) { return t + t * 3.0; }, "wrapping arithmetic");
  same([](const Tensor& t) { return div(t, t * 0.0 - 3.0); }, "division");
  same([](const Tensor& t) { return sum(t, 1); }, "sum");
  same([](const Tensor& t) { return max(t, 0); }, "max");
  same([](const Tensor& t) { return matmul(t, t, false, true); }, "matmul");
  same([](const Tensor& t) { return to_dtype(to_dtype(t, DType::f32), DType::i64); }, "to_dtype");
  same([](const Tensor& t) { return to_dtype(to_dtype(t, DType::i32), DType::i64); }, "narrowing");
  same([](const Tensor& t) { return transpose(t); }, "transpose");
}

}  // namespace
}  // namespace tide::testing
