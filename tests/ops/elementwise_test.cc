// Elementwise ops against references computed here, in-place ordering,
// copies across devices, kernel failures and frontend checks.
#include <cmath>
#include <limits>
#include <string>

#include "ops_test_util.h"

namespace tide::testing {
namespace {

using ElementwiseTest = OpsTest;
TIDE_OPS_TEST_SUITE(ElementwiseTest);

const Shape kShape{7, 13};  // 91 elements: an odd tail for vectorized loops
const std::size_t kN = 91;

/// Nonzero divisors: magnitudes in [1, 9], alternating signs.
template <typename T>
std::vector<T> nonzero_values(std::uint32_t seed) {
  std::vector<T> v = random_values<T>(kN, seed, 1, 9);
  for (std::size_t i = 0; i < v.size(); i += 2) v[i] = -v[i];
  return v;
}

/// Results of one IEEE operation in T are correctly rounded, here and in
/// the kernel alike, so they compare exactly.
template <typename T, typename Op>
void expect_binary(const std::vector<T>& got, const std::vector<T>& a, const std::vector<T>& b, Op op) {
  ASSERT_EQ(got.size(), a.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(got[i], static_cast<T>(op(a[i], b[i]))) << i;
}

TEST_P(ElementwiseTest, TensorTensor) {
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    std::vector<T> av = random_values<T>(kN, 10, -10, 10), bv = nonzero_values<T>(11);
    Tensor a = from_vector(av, kShape), b = from_vector(bv, kShape);
    Tensor s = add(a, b);
    EXPECT_EQ(s.shape(), kShape);
    EXPECT_EQ(s.dtype(), dtype_v<T>);
    expect_binary<T>(s.to_vector<T>(), av, bv, [](T x, T y) { return x + y; });
    expect_binary<T>(sub(a, b).to_vector<T>(), av, bv, [](T x, T y) { return x - y; });
    expect_binary<T>(mul(a, b).to_vector<T>(), av, bv, [](T x, T y) { return x * y; });
    expect_binary<T>(div(a, b).to_vector<T>(), av, bv, [](T x, T y) { return x / y; });  // i32 truncates
    expect_binary<T>((a + b).to_vector<T>(), av, bv, [](T x, T y) { return x + y; });
    expect_binary<T>((a / b).to_vector<T>(), av, bv, [](T x, T y) { return x / y; });
  });
}

TEST_P(ElementwiseTest, WithScalar) {
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    std::vector<T> av = nonzero_values<T>(12);
    Tensor a = from_vector(av, kShape);
    const double s = 2.5;
    const T st = static_cast<T>(s);  // the scalar in the tensor's dtype (2 for i32)
    std::vector<T> sv(kN, st);
    expect_binary<T>(add(a, s).to_vector<T>(), av, sv, [](T x, T y) { return x + y; });
    expect_binary<T>(sub(a, s).to_vector<T>(), av, sv, [](T x, T y) { return x - y; });
    expect_binary<T>(rsub(a, s).to_vector<T>(), av, sv, [](T x, T y) { return y - x; });
    expect_binary<T>(mul(a, s).to_vector<T>(), av, sv, [](T x, T y) { return x * y; });
    expect_binary<T>(div(a, s).to_vector<T>(), av, sv, [](T x, T y) { return x / y; });
    expect_binary<T>(rdiv(a, s).to_vector<T>(), av, sv, [](T x, T y) { return y / x; });
    expect_binary<T>((s - a).to_vector<T>(), av, sv, [](T x, T y) { return y - x; });
    expect_binary<T>((s / a).to_vector<T>(), av, sv, [](T x, T y) { return y / x; });
    expect_binary<T>((s * a).to_vector<T>(), av, sv, [](T x, T y) { return x * y; });
  });
}

TEST_P(ElementwiseTest, Unary) {
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    std::vector<T> av = random_values<T>(kN, 13, -5, 5);
    Tensor a = from_vector(av, kShape);
    std::vector<T> n = neg(a).to_vector<T>(), m = (-a).to_vector<T>(), r = relu(a).to_vector<T>();
    for (std::size_t i = 0; i < kN; ++i) {
      EXPECT_EQ(n[i], static_cast<T>(-av[i]));
      EXPECT_EQ(m[i], static_cast<T>(-av[i]));
      EXPECT_EQ(r[i], av[i] > 0 ? av[i] : T(0));
    }
  });
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      std::vector<T> av = random_values<T>(kN, 14, -3, 3), pv = random_values<T>(kN, 15, 0.01, 50);
      Tensor a = from_vector(av, kShape), p = from_vector(pv, kShape);
      std::vector<T> e = exp(a).to_vector<T>(), l = log(p).to_vector<T>();
      // Both sides call std::exp / std::log in T, but the compiler may pick
      // a different implementation for the kernel's loop than for this one
      // (vectorized, inlined): allow 4 ulps, relative.
      const double tol = 4 * std::numeric_limits<T>::epsilon();
      for (std::size_t i = 0; i < kN; ++i) {
        EXPECT_NEAR(e[i], std::exp(av[i]), tol * std::exp(av[i])) << i;
        EXPECT_NEAR(l[i], std::log(pv[i]), tol * std::max<double>(1.0, std::abs(std::log(pv[i])))) << i;
      }
    }
  });
}

TEST_P(ElementwiseTest, InPlace) {
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    std::vector<T> av = random_values<T>(kN, 16, -10, 10), bv = random_values<T>(kN, 17, -10, 10);
    Tensor a = from_vector(av, kShape), b = from_vector(bv, kShape);
    Tensor before = mul(a, 1.0);  // reads a before the writes below (WAR)
    std::vector<T> ref = av;
    add_(a, b);
    for (std::size_t i = 0; i < kN; ++i) ref[i] = static_cast<T>(ref[i] + bv[i]);
    sub_(a, b);
    for (std::size_t i = 0; i < kN; ++i) ref[i] = static_cast<T>(ref[i] - bv[i]);
    mul_(a, b);
    for (std::size_t i = 0; i < kN; ++i) ref[i] = static_cast<T>(ref[i] * bv[i]);
    add_(a, 3.0);
    for (std::size_t i = 0; i < kN; ++i) ref[i] = static_cast<T>(ref[i] + T(3));
    mul_(a, -2.0);
    for (std::size_t i = 0; i < kN; ++i) ref[i] = static_cast<T>(ref[i] * T(-2));
    a += b;
    for (std::size_t i = 0; i < kN; ++i) ref[i] = static_cast<T>(ref[i] + bv[i]);
    a -= b;
    for (std::size_t i = 0; i < kN; ++i) ref[i] = static_cast<T>(ref[i] - bv[i]);
    a *= b;
    for (std::size_t i = 0; i < kN; ++i) ref[i] = static_cast<T>(ref[i] * bv[i]);
    a *= 3.0;
    for (std::size_t i = 0; i < kN; ++i) ref[i] = static_cast<T>(ref[i] * T(3));
    a += 1.0;
    for (std::size_t i = 0; i < kN; ++i) ref[i] = static_cast<T>(ref[i] + T(1));
    EXPECT_EQ(a.to_vector<T>(), ref);  // exact: one correctly rounded operation per step
    EXPECT_EQ(before.to_vector<T>(), av);
    add_(a, a);  // a storage read and written by the same op
    for (std::size_t i = 0; i < kN; ++i) ref[i] = static_cast<T>(ref[i] + ref[i]);
    EXPECT_EQ(a.to_vector<T>(), ref);
  });
}

TEST_P(ElementwiseTest, ExpressionOfOnes) {
  Tensor x = ones({2, 2}), y = ones({2, 2});
  Tensor z = x * y + 2;
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(4, 3.0f));
  EXPECT_EQ((2 * x - y / 4).to_vector<float>(), std::vector<float>(4, 1.75f));
  EXPECT_EQ((1 - x).to_vector<float>(), std::vector<float>(4, 0.0f));
}

TEST_P(ElementwiseTest, Copies) {
  std::vector<double> v = random_values<double>(kN, 18);
  Tensor src = from_vector(v, kShape);
  Tensor moved = copy_to(src, cpu(1));
  EXPECT_EQ(moved.device(), cpu(1));
  EXPECT_EQ(moved.shape(), kShape);
  EXPECT_EQ(moved.to_vector<double>(), v);
  EXPECT_FALSE(moved.is_same(src));

  Tensor dst = zeros(kShape, {DType::f64, cpu(1)});
  copy_(dst, src);  // across devices: runs on dst's device
  EXPECT_EQ(dst.to_vector<double>(), v);
  Tensor back = zeros(kShape, {DType::f64});
  copy_(back, add(dst, 1.0));
  std::vector<double> back_v = back.to_vector<double>();
  for (std::size_t i = 0; i < kN; ++i) EXPECT_EQ(back_v[i], v[i] + 1.0);
  copy_(back, back);
  EXPECT_EQ(back.to_vector<double>(), add(dst, 1.0).to_vector<double>());

  // Ops on the copy keep their device: a moved tensor combines with a
  // tensor made on its device.
  Tensor sum1 = add(moved, ones(kShape, {DType::f64, cpu(1)}));
  EXPECT_EQ(sum1.device(), cpu(1));
}

TEST_P(ElementwiseTest, IntegerDivisionByZeroFailsOnTheBackend) {
  Tensor a = from_vector(std::vector<std::int32_t>{6, 7, 8}), z = from_vector(std::vector<std::int32_t>{3, 0, 2});
  const int line = __LINE__ + 1;
  Tensor q = a / z;  // pushed fine: the zero is only seen by the kernel
  Tensor later = q + 1;
  try {
    later.wait_to_read();
    FAIL() << "expected a BackendError";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.provenance().op, "div");
    EXPECT_NE(e.provenance().what.find("integer division by zero"), std::string::npos);
    EXPECT_NE(e.provenance().call_site.find("elementwise_test.cc:" + std::to_string(line)),
              std::string::npos)
        << e.provenance().call_site;
  }
  EXPECT_THROW(rdiv(z, 5).wait_to_read(), BackendError);
  Tensor min = full({1}, std::numeric_limits<std::int32_t>::min(), {DType::i32});
  EXPECT_THROW(div(min, full({1}, -1, {DType::i32})).wait_to_read(), BackendError);
  eng().wait_all();  // every error above was reported at its barrier
  // The engine stays usable.
  EXPECT_EQ((a / 2).to_vector<std::int32_t>(), (std::vector<std::int32_t>{3, 3, 4}));
  // Floating division by zero is IEEE, not an error.
  EXPECT_TRUE(std::isinf((ones({1}) / zeros({1})).item<float>()));
}

TEST_P(ElementwiseTest, I32ArithmeticWraps) {
  const std::int32_t big = std::numeric_limits<std::int32_t>::max();
  Tensor t = full({1}, big, {DType::i32});
  EXPECT_EQ((t + 1).item<std::int32_t>(), std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(neg(t + 1).item<std::int32_t>(), std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ((t * 2).item<std::int32_t>(), -2);
}

TEST_P(ElementwiseTest, BadInputThrowsAndEnqueuesNothing) {
  Tensor a = ones({2, 3}), b = ones({3, 2}), d = ones({2, 3}, {DType::f64});
  Tensor other_dev = ones({2, 3}, {DType::f32, cpu(1)});
  Tensor ia = ones({2, 3}, {DType::i32});
  Tensor undefined;
  eng().wait_all();

  EXPECT_REJECTED(ShapeError, add(a, b));
  EXPECT_REJECTED(ShapeError, a * b);
  EXPECT_REJECTED(DTypeError, sub(a, d));
  EXPECT_REJECTED(DeviceError, mul(a, other_dev));
  EXPECT_REJECTED(UndefinedTensorError, div(undefined, a));
  EXPECT_REJECTED(UndefinedTensorError, add(a, undefined));
  EXPECT_REJECTED(UndefinedTensorError, neg(undefined));
  EXPECT_REJECTED(UndefinedTensorError, add_(undefined, a));
  EXPECT_REJECTED(DTypeError, exp(ia));
  EXPECT_REJECTED(DTypeError, log(ia));
  EXPECT_REJECTED(ValueError, div(ia, 0.0));
  EXPECT_REJECTED(ValueError, div(ia, 0.5));  // truncates to 0 in i32
  EXPECT_REJECTED(ValueError, add(ia, 1e10));
  EXPECT_REJECTED(ValueError, mul_(ia, std::nan("")));
  EXPECT_REJECTED(ShapeError, add_(a, b));
  EXPECT_REJECTED(DTypeError, mul_(a, d));
  EXPECT_REJECTED(DeviceError, sub_(a, other_dev));
  EXPECT_REJECTED(ShapeError, copy_(a, b));
  EXPECT_REJECTED(DTypeError, copy_(a, d));
  EXPECT_REJECTED(UndefinedTensorError, copy_(a, undefined));
  EXPECT_REJECTED(DeviceError, copy_to(a, cpu(2)));
  EXPECT_REJECTED(UndefinedTensorError, copy_to(undefined, cpu(1)));

  std::string msg = message_of<ShapeError>([&] { add(a, b); });
  EXPECT_NE(msg.find("add"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 2]"), std::string::npos) << msg;
  msg = message_of<DTypeError>([&] { sub(a, d); });
  EXPECT_NE(msg.find("f32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f64"), std::string::npos) << msg;
  msg = message_of<DeviceError>([&] { mul(a, other_dev); });
  EXPECT_NE(msg.find("cpu:0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cpu:1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("copy_to"), std::string::npos) << msg;
}

TEST_P(ElementwiseTest, TensorOfAnotherEngineIsRefused) {
  Tensor foreign;
  {
    auto other = Engine::create(EngineOptions{});
    EngineScope scope(*other);
    foreign = ones({2, 3});
    other->wait_all();
  }
  Tensor a = ones({2, 3});
  EXPECT_REJECTED(UsageError, add(a, foreign));
  EXPECT_REJECTED(UsageError, neg(foreign));
  EXPECT_REJECTED(UsageError, copy_(a, foreign));
}

}  // namespace
}  // namespace tide::testing
