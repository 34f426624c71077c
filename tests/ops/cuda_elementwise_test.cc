// CUDA elementwise ops against the CPU backend on the same inputs: exact for
// every op that is one correctly rounded IEEE operation or integer math
// (add, sub, mul, div, the comparisons, neg, relu, abs, sqrt, in place),
// within a few ulps for exp, log, tanh, sigmoid and pow. Sizes cover the empty tensor, tails shorter than a 16-byte pack,
// and a grid-stride loop over more than one grid.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "cuda_ops_test_util.h"

namespace tide::testing {
namespace {

using CudaElementwiseTest = ::testing::TestWithParam<EngineKind>;
TIDE_OPS_TEST_SUITE(CudaElementwiseTest);

// CUDA's expf is within 2 ulps of the correctly rounded result, logf, exp
// and log within 1 (CUDA C++ Programming Guide, mathematical functions
// appendix); glibc stays within 1. Their difference is at most 3 ulps.
constexpr double kTranscendentalUlps = 4;

/// a and b in [-100, 100]; every third b equals a (so eq finds matches);
/// for i32 no b is 0, since the CPU fails on a zero divisor.
template <typename T>
std::pair<std::vector<T>, std::vector<T>> binary_inputs(std::int64_t n, std::uint32_t seed) {
  const auto size = static_cast<std::size_t>(n);
  std::vector<T> a = random_values<T>(size, seed, -100, 100), b = random_values<T>(size, seed + 1, -100, 100);
  for (std::size_t i = 0; i < size; i += 3) b[i] = a[i];
  if constexpr (std::is_integral_v<T>)
    for (auto& x : b) x = x == 0 ? T(7) : x;
  return {a, b};
}

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
const std::vector<std::pair<const char*, BinaryFn>> kBinary = {
    {"add", [](const Tensor& x, const Tensor& y) { return add(x, y); }},
    {"sub", [](const Tensor& x, const Tensor& y) { return sub(x, y); }},
    {"mul", [](const Tensor& x, const Tensor& y) { return mul(x, y); }},
    {"div", [](const Tensor& x, const Tensor& y) { return div(x, y); }},
    {"eq", [](const Tensor& x, const Tensor& y) { return eq(x, y); }},
    {"ne", [](const Tensor& x, const Tensor& y) { return ne(x, y); }},
    {"gt", [](const Tensor& x, const Tensor& y) { return gt(x, y); }},
    {"ge", [](const Tensor& x, const Tensor& y) { return ge(x, y); }},
    {"lt", [](const Tensor& x, const Tensor& y) { return lt(x, y); }},
    {"le", [](const Tensor& x, const Tensor& y) { return le(x, y); }},
    {"maximum", [](const Tensor& x, const Tensor& y) { return maximum(x, y); }},
    {"minimum", [](const Tensor& x, const Tensor& y) { return minimum(x, y); }},
};

using ScalarFn = std::function<Tensor(const Tensor&, double)>;
const std::vector<std::pair<const char*, ScalarFn>> kScalar = {
    {"add", [](const Tensor& x, double s) { return add(x, s); }},
    {"sub", [](const Tensor& x, double s) { return sub(x, s); }},
    {"rsub", [](const Tensor& x, double s) { return rsub(x, s); }},
    {"mul", [](const Tensor& x, double s) { return mul(x, s); }},
    {"div", [](const Tensor& x, double s) { return div(x, s); }},
    {"rdiv", [](const Tensor& x, double s) { return rdiv(x, s); }},
    {"gt", [](const Tensor& x, double s) { return gt(x, s); }},
    {"le", [](const Tensor& x, double s) { return le(x, s); }},
    {"ne", [](const Tensor& x, double s) { return ne(x, s); }},
    {"maximum", [](const Tensor& x, double s) { return maximum(x, s); }},
    {"minimum", [](const Tensor& x, double s) { return minimum(x, s); }},
};

// CUDA's powf is within 4 ulps (pow within 2), tanhf within 2, and the
// sigmoid adds a division's rounding to expf's 2: twice the exp bound.
constexpr double kPowUlps = 8;

TEST_P(CudaElementwiseTest, TensorTensorMatchesCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    for (std::int64_t n : kGpuSizes) {
      auto [av, bv] = binary_inputs<T>(n, 20);
      Tensor ca = from_vector(av), cb = from_vector(bv);
      Tensor ga = to_gpu(av), gb = to_gpu(bv);
      for (const auto& [name, fn] : kBinary) {
        Tensor g = fn(ga, gb);
        EXPECT_EQ(g.device(), cuda(0));
        // Comparisons give bool, the rest the operands' dtype.
        const std::string op = name;
        const bool comparison = op == "eq" || op == "ne" || op == "gt" || op == "ge" || op == "lt" || op == "le";
        EXPECT_EQ(g.dtype(), comparison ? DType::b8 : dtype_v<T>) << label(name, dtype_v<T>, n);
        EXPECT_EQ(g.shape(), ga.shape());
        expect_exact(g.to_vector<T>(), values<T>(fn(ca, cb)), label(name, dtype_v<T>, n));
      }
    }
  });
}

TEST_P(CudaElementwiseTest, WithScalarMatchesCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    for (std::int64_t n : kGpuSizes) {
      // No zero element: rdiv divides by it, which the CPU refuses in i32.
      std::vector<T> av = binary_inputs<T>(n, 30).first;
      for (auto& x : av) x = x == 0 ? T(3) : x;
      Tensor ca = from_vector(av), ga = to_gpu(av);
      for (double s : {2.5, -3.0}) {  // 2.5 truncates to 2 in i32, as on the CPU
        for (const auto& [name, fn] : kScalar) {
          // A fractional bound of an integer maximum or minimum is refused
          // on every device, before anything is pushed.
          const std::string op = name;
          if (std::is_integral_v<T> && s != std::floor(s) && (op == "maximum" || op == "minimum")) {
            EXPECT_THROW(fn(ga, s), ValueError) << label(name, dtype_v<T>, n);
            EXPECT_THROW(fn(ca, s), ValueError) << label(name, dtype_v<T>, n);
            continue;
          }
          expect_exact(values<T>(fn(ga, s)), values<T>(fn(ca, s)),
                       label(name, dtype_v<T>, n) + " s=" + std::to_string(s));
        }
      }
    }
  });
}

TEST_P(CudaElementwiseTest, UnaryMatchesCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    for (std::int64_t n : kGpuSizes) {
      const auto size = static_cast<std::size_t>(n);
      std::vector<T> av = random_values<T>(size, 40, -20, 20);
      Tensor ca = from_vector(av), ga = to_gpu(av);
      expect_exact(neg(ga).to_vector<T>(), neg(ca).to_vector<T>(), label("neg", dtype_v<T>, n));
      expect_exact(relu(ga).to_vector<T>(), relu(ca).to_vector<T>(), label("relu", dtype_v<T>, n));
      if constexpr (std::is_floating_point_v<T>) {
        std::vector<T> pv = random_values<T>(size, 41, 0.001, 1000);
        Tensor cp = from_vector(pv), gp = to_gpu(pv);
        expect_ulps(exp(ga).to_vector<T>(), exp(ca).to_vector<T>(), kTranscendentalUlps,
                    label("exp", dtype_v<T>, n));
        expect_ulps(log(gp).to_vector<T>(), log(cp).to_vector<T>(), kTranscendentalUlps,
                    label("log", dtype_v<T>, n));
      }
    }
  });
}

TEST_P(CudaElementwiseTest, MathOpsMatchCpu) {
  // abs and sqrt are exact (sqrt is correctly rounded on both: no fast
  // math); tanh, sigmoid and pow within a few ulps; every size, so that
  // packed and scalar paths both run.
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    for (std::int64_t n : kGpuSizes) {
      const auto size = static_cast<std::size_t>(n);
      std::vector<T> av = random_values<T>(size, 42, -20, 20);
      Tensor ca = from_vector(av), ga = to_gpu(av);
      expect_exact(abs(ga).to_vector<T>(), abs(ca).to_vector<T>(), label("abs", dtype_v<T>, n));
      if constexpr (std::is_floating_point_v<T>) {
        std::vector<T> pv = random_values<T>(size, 43, 0.01, 10), ev = random_values<T>(size, 44, -3, 3);
        Tensor cp = from_vector(pv), gp = to_gpu(pv), ce = from_vector(ev), ge_ = to_gpu(ev);
        expect_exact(sqrt(gp).to_vector<T>(), sqrt(cp).to_vector<T>(), label("sqrt", dtype_v<T>, n));
        expect_ulps(tanh(ga).to_vector<T>(), tanh(ca).to_vector<T>(), kTranscendentalUlps,
                    label("tanh", dtype_v<T>, n));
        expect_ulps(sigmoid(ga).to_vector<T>(), sigmoid(ca).to_vector<T>(), kPowUlps, label("sigmoid", dtype_v<T>, n));
        expect_ulps(pow(gp, ge_).to_vector<T>(), pow(cp, ce).to_vector<T>(), kPowUlps, label("pow", dtype_v<T>, n));
        expect_ulps(pow(gp, 2.5).to_vector<T>(), pow(cp, 2.5).to_vector<T>(), kPowUlps,
                    label("pow scalar", dtype_v<T>, n));
        expect_ulps(rpow(ge_, 1.5).to_vector<T>(), rpow(ce, 1.5).to_vector<T>(), kPowUlps,
                    label("rpow", dtype_v<T>, n));
      }
    }
  });
}

TEST_P(CudaElementwiseTest, SpecialFloatValuesMatchCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  auto run = [&](auto tag) {
    using T = decltype(tag);
    using L = std::numeric_limits<T>;
    const std::vector<T> av = {T(0), -T(0), L::infinity(), -L::infinity(), L::quiet_NaN(),
                               L::denorm_min(), L::min(), L::max(), T(-1), T(1), -L::max()};
    std::vector<T> bv(av.rbegin(), av.rend());
    Tensor ca = from_vector(av), cb = from_vector(bv), ga = to_gpu(av), gb = to_gpu(bv);
    const DType dt = dtype_v<T>;
    const auto n = static_cast<std::int64_t>(av.size());
    // Overflow, inf - inf, 0 * inf, x / 0 and NaN operands: IEEE on both.
    for (const auto& [name, fn] : kBinary)
      expect_exact(values<T>(fn(ga, gb)), values<T>(fn(ca, cb)), label(name, dt, n));
    expect_exact(neg(ga).to_vector<T>(), neg(ca).to_vector<T>(), label("neg", dt, n));
    // relu keeps NaN and -0, like the CPU's x < 0 ? 0 : x.
    expect_exact(relu(ga).to_vector<T>(), relu(ca).to_vector<T>(), label("relu", dt, n));
    // exp(+-inf), log(0) = -inf, log(-1) = NaN, log of a subnormal.
    expect_ulps(exp(ga).to_vector<T>(), exp(ca).to_vector<T>(), kTranscendentalUlps, label("exp", dt, n));
    expect_ulps(log(ga).to_vector<T>(), log(ca).to_vector<T>(), kTranscendentalUlps, label("log", dt, n));
    // sqrt(-1) = NaN, sqrt(-0) = -0; tanh and sigmoid saturate at the
    // infinities (never NaN); abs(-0) = +0.
    expect_exact(sqrt(ga).to_vector<T>(), sqrt(ca).to_vector<T>(), label("sqrt", dt, n));
    expect_exact(abs(ga).to_vector<T>(), abs(ca).to_vector<T>(), label("abs", dt, n));
    expect_ulps(tanh(ga).to_vector<T>(), tanh(ca).to_vector<T>(), kTranscendentalUlps, label("tanh", dt, n));
    expect_ulps(sigmoid(ga).to_vector<T>(), sigmoid(ca).to_vector<T>(), kPowUlps, label("sigmoid", dt, n));
  };
  run(float{});
  run(double{});
}

TEST_P(CudaElementwiseTest, InPlaceMatchesCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    for (std::int64_t n : kGpuSizes) {
      auto [av, bv] = binary_inputs<T>(n, 50);
      Tensor cb = from_vector(bv), gb = to_gpu(bv);
      Tensor ca = from_vector(av), ga = to_gpu(av);
      const Tensor ga_before = mul(ga, 1.0);  // pushed before the writes below (WAR)
      for (Tensor* t : {&ca, &ga}) {
        Tensor& a = *t;
        const Tensor& b = a.device().is_cuda() ? gb : cb;
        add_(a, b);
        sub_(a, b);
        mul_(a, b);
        add_(a, 3.0);
        mul_(a, -2.0);
        a += b;
        a *= 3.0;
        add_(a, a);  // one storage read and written by the same op
      }
      expect_exact(ga.to_vector<T>(), ca.to_vector<T>(), label("in-place chain", dtype_v<T>, n));
      expect_exact(ga_before.to_vector<T>(), av, label("read before the writes", dtype_v<T>, n));
    }
  });
}

TEST_P(CudaElementwiseTest, I32DivisionByZeroGivesZeroAndNoError) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  Tensor a = to_gpu(std::vector<std::int32_t>{6, 7, 8, kMin, kMin, 5, -9});
  Tensor z = to_gpu(std::vector<std::int32_t>{3, 0, 2, -1, 0, -1, 0});
  // The CPU throws for these (see elementwise.h); the GPU kernel defines
  // x / 0 as 0 and INT32_MIN / -1 as the wrapped INT32_MIN.
  EXPECT_EQ(div(a, z).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{2, 0, 4, kMin, 0, -5, 0}));
  EXPECT_EQ(rdiv(z, 12).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{4, 0, 6, -12, 0, -12, 0}));
  EXPECT_NO_THROW(eng->wait_all());
  // A scalar zero divisor is still refused on the frontend.
  EXPECT_THROW(div(a, 0.5), ValueError);
}

TEST_P(CudaElementwiseTest, I32ArithmeticWrapsAsOnCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  const std::vector<std::int32_t> v = {kMax, -kMax - 1, kMax / 2 + 1, -1, 0};
  Tensor c = from_vector(v), g = to_gpu(v);
  expect_exact((g + 1).to_vector<std::int32_t>(), (c + 1).to_vector<std::int32_t>(), "add wraps");
  expect_exact((g - 2).to_vector<std::int32_t>(), (c - 2).to_vector<std::int32_t>(), "sub wraps");
  expect_exact((g * 2).to_vector<std::int32_t>(), (c * 2).to_vector<std::int32_t>(), "mul wraps");
  expect_exact(neg(g).to_vector<std::int32_t>(), neg(c).to_vector<std::int32_t>(), "neg wraps");
  expect_exact(add(g, g).to_vector<std::int32_t>(), add(c, c).to_vector<std::int32_t>(), "a + a wraps");
}

TEST_P(CudaElementwiseTest, FrontendChecksAreShared) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  Tensor g = zeros({2, 3}, {DType::f32, cuda(0)}), c = zeros({2, 3});
  Tensor gi = zeros({2, 3}, {DType::i32, cuda(0)}), gt = zeros({3, 2}, {DType::f32, cuda(0)});
  const std::uint64_t before = eng->stats().ops_pushed;
  EXPECT_THROW(add(g, c), DeviceError);
  EXPECT_THROW(add(g, gi), DTypeError);
  EXPECT_THROW(add(g, gt), ShapeError);
  EXPECT_THROW(exp(gi), DTypeError);
  EXPECT_THROW(div(gi, 0.9), ValueError);
  EXPECT_EQ(eng->stats().ops_pushed, before);  // each refused before anything was pushed
}

}  // namespace
}  // namespace tide::testing
