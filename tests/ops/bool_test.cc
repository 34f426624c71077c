// The bool dtype (b8), both engines on the CPU: comparisons and logical ops
// make it (any, all too); it
// converts to and from every dtype; a bool operand beside a number tensor is
// taken as that tensor's dtype; sum counts its true values; it is moved,
// viewed, selected, filled, printed and saved; and every op that takes
// numbers refuses it before anything is queued. On a GPU the same ops
// against the CPU (skipped without one).
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include <tide/ops/autograd.h>

#include "cuda_ops_test_util.h"

namespace tide::testing {
namespace {

using BoolTest = OpsTest;
TIDE_OPS_TEST_SUITE(BoolTest);

using Bools = std::vector<bool>;

TEST_P(BoolTest, ComparisonsMakeBoolTensorsOfEveryDtypeAndShape) {
  for_each_numeric_dtype([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    const Tensor a = from_vector(std::vector<T>{1, 2, 3, 4}, {2, 2}), b = from_vector(std::vector<T>{4, 2, 1, 4}, {2, 2});
    for (const Tensor& r : {eq(a, b), ne(a, b), gt(a, b), ge(a, b), lt(a, b), le(a, b), gt(a, 2.0)}) {
      EXPECT_EQ(r.dtype(), DType::b8);
      EXPECT_EQ(r.shape(), (Shape{2, 2}));
    }
    EXPECT_EQ(ge(a, b).to_vector<bool>(), (Bools{false, true, true, true}));
    EXPECT_EQ(lt(a, 2.5).to_vector<bool>(), (Bools{true, true, false, false}));
    // Broadcast: a row against a column.
    const Tensor row = from_vector(std::vector<T>{1, 3}, {1, 2}), col = from_vector(std::vector<T>{2, 3}, {2, 1});
    const Tensor m = lt(row, col);
    EXPECT_EQ(m.dtype(), DType::b8);
    EXPECT_EQ(m.to_vector<bool>(), (Bools{true, false, true, false}));
  });
}

TEST_P(BoolTest, ConversionsToAndFromBool) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor f = from_vector(std::vector<double>{0.0, -0.0, 0.5, -3.0, nan}, {5});
  const Tensor b = to_dtype(f, DType::b8);
  EXPECT_EQ(b.dtype(), DType::b8);
  EXPECT_EQ(b.to_vector<bool>(), (Bools{false, false, true, true, true}));  // NaN is true, as in numpy
  for (DType dt : {DType::f32, DType::f64, DType::i32, DType::i64}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor back = to_dtype(b, dt);
    EXPECT_EQ(back.dtype(), dt);
    EXPECT_EQ(back.to_vector<double>(), (std::vector<double>{0, 0, 1, 1, 1}));
    EXPECT_EQ(to_dtype(to_dtype(from_vector(std::vector<std::int64_t>{0, 2, -1}), dt), DType::b8).to_vector<bool>(),
              (Bools{false, true, true}));
  }
  EXPECT_EQ(from_vector(Bools{true}).item<bool>(), true);
  EXPECT_EQ(from_vector(Bools{false}).item<double>(), 0.0);
}

TEST_P(BoolTest, ABoolOperandIsTakenAsTheOtherOperandsDtype) {
  const Tensor x = from_vector(std::vector<float>{1.5f, -2.0f, 3.0f}, {3});
  const Tensor m = gt(x, 0.0);
  const Tensor y = mul(x, m);  // torch's x * (x > 0)
  EXPECT_EQ(y.dtype(), DType::f32);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1.5f, 0.0f, 3.0f}));
  const Tensor i = add(m, from_vector(std::vector<std::int64_t>{10, 10, 10}));
  EXPECT_EQ(i.dtype(), DType::i64);
  EXPECT_EQ(i.to_vector<std::int64_t>(), (std::vector<std::int64_t>{11, 10, 11}));
  // With a number: as f32.
  const Tensor s = mul(m, 2.5);
  EXPECT_EQ(s.dtype(), DType::f32);
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{2.5f, 0.0f, 2.5f}));
  // Two bool tensors compare as they are, but do no arithmetic.
  const Tensor n = lt(x, 2.0);
  EXPECT_EQ(eq(m, n).to_vector<bool>(), (Bools{true, false, false}));
  EXPECT_EQ(eq(m, 1.0).to_vector<bool>(), (Bools{true, false, true}));
  EXPECT_EQ(gt(m, 0.5).to_vector<bool>(), (Bools{true, false, true}));
  EXPECT_EQ(eq(m, 2.0).to_vector<bool>(), (Bools{false, false, false}));  // true is 1, not 2
  // Broadcast, beside f64, and in place into a number tensor.
  const Tensor col = from_vector(Bools{true, false}, {2, 1});
  const Tensor wide = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor masked = mul(wide, col);
  EXPECT_EQ(masked.dtype(), DType::f64);
  EXPECT_EQ(masked.to_vector<double>(), (std::vector<double>{1, 2, 3, 0, 0, 0}));
  Tensor acc = from_vector(std::vector<float>{10, 10, 10}, {3});
  add_(acc, m);
  EXPECT_EQ(acc.to_vector<float>(), (std::vector<float>{11, 10, 11}));
  EXPECT_EQ(minimum(m, x).to_vector<float>(), (std::vector<float>{1, -2, 1}));
  const Tensor three_wide = from_vector(Bools{true, true, true, true}, {4});
  eng().wait_all();
  EXPECT_REJECTED(ShapeError, mul(x, three_wide));  // shapes checked before the conversion is queued
  EXPECT_REJECTED(ShapeError, add_(acc, col));
  EXPECT_REJECTED(DTypeError, add(m, n));
  Tensor target = m;
  EXPECT_REJECTED(DTypeError, add_(target, x));
  EXPECT_REJECTED(DTypeError, mul_(target, 2.0));
}

TEST_P(BoolTest, SumCountsTrueValuesAndOtherReductionsRefuse) {
  const Tensor m = from_vector(Bools{true, false, true, true, false, true}, {2, 3});
  const Tensor all = sum(m);
  EXPECT_EQ(all.dtype(), DType::i64);
  EXPECT_EQ(all.item<std::int64_t>(), 4);
  EXPECT_EQ(sum(m, 0).to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 0, 2}));
  EXPECT_EQ(sum(m, -1).to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 2}));
  eng().wait_all();
  EXPECT_REJECTED(DTypeError, mean(m));
  EXPECT_REJECTED(DTypeError, max(m, 1));
  EXPECT_REJECTED(DTypeError, argmax(m, 1));
  EXPECT_REJECTED(ShapeError, sum(m, 2));
}

TEST_P(BoolTest, OpsOnNumbersRefuseBoolBeforeQueuingAnything) {
  const Tensor m = from_vector(Bools{true, false, true, true}, {2, 2});
  const Tensor row = from_vector(Bools{true, true}, {1, 2});
  const Tensor at0 = from_vector(std::vector<std::int32_t>{0});
  eng().wait_all();
  EXPECT_REJECTED(DTypeError, neg(m));
  EXPECT_REJECTED(DTypeError, abs(m));
  EXPECT_REJECTED(DTypeError, exp(m));
  EXPECT_REJECTED(DTypeError, relu(m));
  EXPECT_REJECTED(DTypeError, matmul(m, m));
  EXPECT_REJECTED(DTypeError, index_add(m, 0, at0, row));
  EXPECT_REJECTED(DTypeError, arange(0, 3, 1, {DType::b8}));
  EXPECT_REJECTED(DTypeError, randn({2}, {DType::b8}));
  const std::string why = message_of<DTypeError>([&] { neg(m); });
  EXPECT_NE(why.find("bool"), std::string::npos) << why;
}

TEST_P(BoolTest, MovedViewedSelectedFilledAndPrinted) {
  const Tensor m = from_vector(Bools{true, false, false, true, true, false}, {2, 3});
  EXPECT_EQ(transpose(m).to_vector<bool>(), (Bools{true, true, false, true, false, false}));
  EXPECT_EQ(reshape(m, {3, 2}).to_vector<bool>(), m.to_vector<bool>());
  EXPECT_EQ(slice(m, 1, 0, 3, 2).to_vector<bool>(), (Bools{true, false, true, false}));
  const Tensor joined = cat({m, slice(m, 0, 1, 2)}, 0);
  EXPECT_EQ(joined.dtype(), DType::b8);
  EXPECT_EQ(joined.shape(), (Shape{3, 3}));
  EXPECT_EQ(joined.to_vector<bool>(), (Bools{true, false, false, true, true, false, true, true, false}));
  EXPECT_EQ(index_select(m, 1, from_vector(std::vector<std::int64_t>{2, 0})).to_vector<bool>(),
            (Bools{false, true, false, true}));
  // where: a bool condition, and bool values.
  const Tensor a = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(where(m, a, 0.0).to_vector<float>(), (std::vector<float>{1, 0, 0, 4, 5, 0}));
  EXPECT_EQ(where(m, m, eq(m, 0.0)).to_vector<bool>(), (Bools{true, true, true, true, true, true}));
  EXPECT_EQ(full({3}, 2.0, {DType::b8}).to_vector<bool>(), (Bools{true, true, true}));
  EXPECT_EQ(zeros({2}, {DType::b8}).to_vector<bool>(), (Bools{false, false}));
  EXPECT_EQ(ones({1}, {DType::b8}).item<bool>(), true);
  std::ostringstream os;
  os << Printed(from_vector(Bools{true, false}), Loc::current());
  EXPECT_NE(os.str().find("[True, False]"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("dtype=bool"), std::string::npos) << os.str();
  EXPECT_EQ(dtype_size(DType::b8), 1u);
  EXPECT_EQ(m.nbytes(), 6u);
}

TEST_P(BoolTest, ABoolOperandCarriesNoGradientAndBreaksNoBackward) {
  for_each_floating([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    Tensor x = from_vector(std::vector<T>{1.5, -2, 3}, {3});
    x.set_requires_grad();
    const Tensor m = from_vector(Bools{true, false, true});
    // d/dx of sum(x * m + minimum(x, m) + pow(x, m)): m + [x < m] + m x^(m-1)
    backward(sum(add(add(mul(x, m), minimum(x, m)), pow(x, m))));
    EXPECT_EQ(x.grad().dtype(), dtype_v<T>);
    EXPECT_EQ(x.grad().template to_vector<T>(), (std::vector<T>{2, 1, 2}));
  });
}

TEST_P(BoolTest, LogicalOpsAnyAndAll) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor p = from_vector(Bools{true, true, false, false}), q = from_vector(Bools{true, false, true, false});
  EXPECT_EQ(logical_and(p, q).to_vector<bool>(), (Bools{true, false, false, false}));
  EXPECT_EQ(logical_or(p, q).to_vector<bool>(), (Bools{true, true, true, false}));
  EXPECT_EQ(logical_xor(p, q).to_vector<bool>(), (Bools{false, true, true, false}));
  EXPECT_EQ(logical_not(p).to_vector<bool>(), (Bools{false, false, true, true}));
  EXPECT_EQ(logical_and(p, q).dtype(), DType::b8);
  // Numbers: nonzero (NaN too) is true; a bool beside them is taken as their dtype.
  const Tensor x = from_vector(std::vector<double>{0.0, 2.0, nan, -0.0});
  EXPECT_EQ(logical_not(x).to_vector<bool>(), (Bools{true, false, false, true}));
  EXPECT_EQ(logical_and(x, p).to_vector<bool>(), (Bools{false, true, false, false}));
  EXPECT_EQ(logical_or(x, from_vector(std::vector<double>{1, 0, 0, 0})).to_vector<bool>(),
            (Bools{true, true, true, false}));
  // Broadcast: a column against a row.
  EXPECT_EQ(logical_and(reshape(p, {4, 1}), reshape(q, {1, 4})).to_vector<bool>().size(), 16u);
  EXPECT_EQ(logical_xor(reshape(p, {2, 2}), from_vector(Bools{true, false}, {1, 2})).to_vector<bool>(),
            (Bools{false, true, true, false}));
  // any and all, whole and along an axis; empty tensors.
  EXPECT_TRUE(any(p).item<bool>());
  EXPECT_FALSE(all(p).item<bool>());
  EXPECT_EQ(any(p).dtype(), DType::b8);
  EXPECT_TRUE(all(from_vector(std::vector<double>{1.0, nan})).item<bool>());
  const Tensor m = reshape(p, {2, 2});  // [[true, true], [false, false]]
  EXPECT_EQ(all(m, 1).to_vector<bool>(), (Bools{true, false}));
  EXPECT_EQ(any(m, 0).to_vector<bool>(), (Bools{true, true}));
  EXPECT_EQ(all(m, 0).to_vector<bool>(), (Bools{false, false}));
  EXPECT_FALSE(any(zeros({0}, {DType::b8})).item<bool>());
  EXPECT_TRUE(all(zeros({0}, {DType::b8})).item<bool>());
  const Tensor three = from_vector(Bools{true, false, true});
  eng().wait_all();
  EXPECT_REJECTED(ShapeError, logical_and(p, three));
  EXPECT_REJECTED(ShapeError, any(m, 2));
}

using CudaBoolTest = OpsTest;
TIDE_OPS_TEST_SUITE(CudaBoolTest);

TEST_P(CudaBoolTest, MatchesTheCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for (std::int64_t n : kGpuSizes) {
    const std::vector<float> x = random_values<float>(static_cast<std::size_t>(n), 9, -1, 1);
    const std::vector<float> y = random_values<float>(static_cast<std::size_t>(n), 10, -1, 1);
    const Tensor cx = from_vector(x), cy = from_vector(y), gx = to_gpu(x), gy = to_gpu(y);
    const std::string what = "n=" + std::to_string(n);
    const Tensor gm = gt(gx, gy), cm = gt(cx, cy);
    EXPECT_EQ(gm.dtype(), DType::b8) << what;
    EXPECT_EQ(gm.to_vector<bool>(), cm.to_vector<bool>()) << what;
    EXPECT_EQ(lt(gx, 0.25).to_vector<bool>(), lt(cx, 0.25).to_vector<bool>()) << what;
    EXPECT_EQ(to_dtype(gx, DType::b8).to_vector<bool>(), to_dtype(cx, DType::b8).to_vector<bool>()) << what;
    EXPECT_EQ(to_dtype(gm, DType::f32).to_vector<float>(), to_dtype(cm, DType::f32).to_vector<float>()) << what;
    EXPECT_EQ(mul(gx, gm).to_vector<float>(), mul(cx, cm).to_vector<float>()) << what;
    EXPECT_EQ(where(gm, gx, gy).to_vector<float>(), where(cm, cx, cy).to_vector<float>()) << what;
    EXPECT_EQ(sum(gm).item<std::int64_t>(), sum(cm).item<std::int64_t>()) << what;
    EXPECT_EQ(full({n}, 1.0, {DType::b8, cuda(0)}).to_vector<bool>(), Bools(static_cast<std::size_t>(n), true));
    // Bool inputs: the packed path of 16 bools per load when aligned.
    const Tensor gn = lt(gx, 0.0), cn = lt(cx, 0.0);
    EXPECT_EQ(logical_xor(gm, gn).to_vector<bool>(), logical_xor(cm, cn).to_vector<bool>()) << what;
    EXPECT_EQ(eq(gm, gn).to_vector<bool>(), eq(cm, cn).to_vector<bool>()) << what;
    EXPECT_EQ(logical_not(gm).to_vector<bool>(), logical_not(cm).to_vector<bool>()) << what;
    EXPECT_EQ(all(gm).item<bool>(), all(cm).item<bool>()) << what;
  }
  // Broadcast comparisons, gathers and index_select of bool values.
  const std::vector<float> r = random_values<float>(37, 11), c = random_values<float>(29, 12);
  const Tensor cm = lt(from_vector(r, {1, 37}), from_vector(c, {29, 1}));
  const Tensor gm = lt(to_gpu(r, {1, 37}), to_gpu(c, {29, 1}));
  EXPECT_EQ(gm.to_vector<bool>(), cm.to_vector<bool>());
  EXPECT_EQ(transpose(gm).to_vector<bool>(), transpose(cm).to_vector<bool>());
  const std::vector<std::int64_t> idx{5, 0, 36, 5};
  EXPECT_EQ(index_select(gm, 1, to_gpu(idx)).to_vector<bool>(), index_select(cm, 1, from_vector(idx)).to_vector<bool>());
}

}  // namespace
}  // namespace tide::testing
