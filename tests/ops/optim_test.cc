// Optimizer steps (SGD, Adam): against the PyTorch formulas, a failed
// gradient poisoning the updated parameter, and frontend checks.
#include <cmath>
#include <string>

#include "ops_test_util.h"

namespace tide::testing {
namespace {

using OptimTest = OpsTest;
TIDE_OPS_TEST_SUITE(OptimTest);

using Vec = std::vector<double>;

// ---------------------------------------------------------------------------
// Optimizers against the PyTorch formulas, written out per element in
// double with the state kept in T. The kernels arrange the arithmetic
// differently (Adam divides sqrt(v) by sqrt(bc2) instead of taking sqrt(v /
// bc2)), so values may differ in the last bits: f64 within 1e-12 relative,
// f32 within 1e-6 relative (a few ulps), after several steps.

template <typename T>
constexpr double kOptRel = std::is_same_v<T, float> ? 1e-6 : 1e-12;

template <typename T>
void expect_state(const Tensor& t, const std::vector<T>& want, const char* what) {
  const std::vector<T> got = t.to_vector<T>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], kOptRel<T> * (std::abs(want[i]) + 1e-3)) << what << " element " << i;
}

TEST_P(OptimTest, SgdMatchesReferenceOverSteps) {
  const SgdOptions configs[] = {{0.1, 0.0, 0.0}, {0.1, 0.9, 0.0}, {0.05, 0.9, 0.01}, {0.2, 0.0, 0.1}};
  for_each_floating([&](auto tag) {
    using T = decltype(tag);
    for (const SgdOptions& o : configs) {
      SCOPED_TRACE(std::string(dtype_name(dtype_v<T>)) + " lr " + std::to_string(o.lr) + " momentum " +
                   std::to_string(o.momentum) + " wd " + std::to_string(o.weight_decay));
      std::vector<T> p = random_values<T>(24, 70), v(24, T(0));
      Tensor param = from_vector(p, {4, 6}), velocity = zeros({4, 6}, {dtype_v<T>});
      for (int step = 0; step < 5; ++step) {
        const std::vector<T> g = random_values<T>(24, 71 + static_cast<std::uint32_t>(step));
        sgd_step_(param, from_vector(g, {4, 6}), velocity, o);
        // In T, each operation rounded (f32 SGD computes in float, as PyTorch's).
        const T lr = static_cast<T>(o.lr), m = static_cast<T>(o.momentum), wd = static_cast<T>(o.weight_decay);
        for (std::size_t i = 0; i < p.size(); ++i) {
          const T gi = g[i] + wd * p[i];
          v[i] = m * v[i] + gi;
          p[i] = p[i] - lr * v[i];
        }
      }
      expect_state(param, p, "param");
      expect_state(velocity, v, "velocity");
      if (o.momentum == 0.0) {
        // The velocity is just the last (decayed) gradient.
        const std::vector<T> g = random_values<T>(24, 75);
        const std::vector<T> before = param.to_vector<T>();
        std::vector<T> want(24);
        const T wd = static_cast<T>(o.weight_decay);
        for (std::size_t i = 0; i < want.size(); ++i) want[i] = g[i] + wd * before[i];
        sgd_step_(param, from_vector(g, {4, 6}), velocity, o);
        expect_state(velocity, want, "velocity");
      }
    }
  });
}

TEST_P(OptimTest, AdamMatchesReferenceOverSteps) {
  AdamOptions defaults;
  defaults.lr = 1e-2;
  const AdamOptions configs[] = {defaults, {5e-2, 0.8, 0.99, 1e-6, 0.1}, {1e-3, 0.0, 0.5, 1e-8, 0.0}};
  for_each_floating([&](auto tag) {
    using T = decltype(tag);
    for (const AdamOptions& o : configs) {
      SCOPED_TRACE(std::string(dtype_name(dtype_v<T>)) + " lr " + std::to_string(o.lr) + " beta1 " +
                   std::to_string(o.beta1) + " wd " + std::to_string(o.weight_decay));
      std::vector<T> p = random_values<T>(30, 80), m(30, T(0)), v(30, T(0));
      Tensor param = from_vector(p, {30}), mt = zeros({30}, {dtype_v<T>}), vt = zeros({30}, {dtype_v<T>});
      for (std::int64_t step = 1; step <= 6; ++step) {
        const std::vector<T> g = random_values<T>(30, 81 + static_cast<std::uint32_t>(step));
        adam_step_(param, from_vector(g, {30}), mt, vt, step, o);
        const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
        const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
        for (std::size_t i = 0; i < p.size(); ++i) {
          const double gi = g[i] + o.weight_decay * p[i];
          m[i] = static_cast<T>(o.beta1 * m[i] + (1 - o.beta1) * gi);
          v[i] = static_cast<T>(o.beta2 * v[i] + (1 - o.beta2) * gi * gi);
          const double mhat = m[i] / bc1, vhat = v[i] / bc2;
          p[i] = static_cast<T>(p[i] - o.lr * mhat / (std::sqrt(vhat) + o.eps));
        }
      }
      expect_state(param, p, "param");
      expect_state(mt, m, "m");
      expect_state(vt, v, "v");
    }
  });
}

TEST_P(OptimTest, AdamFirstStepMovesByLrTimesSign) {
  // With bias correction, mhat = g and sqrt(vhat) = |g| at step 1: each
  // element moves by lr * g / (|g| + eps), almost exactly lr against g's sign.
  const Vec g{0.5, -2.0, 1e-3, -7.0};
  Tensor param = zeros({4}, {DType::f64}), m = zeros({4}, {DType::f64}), v = zeros({4}, {DType::f64});
  AdamOptions o;
  o.lr = 0.1;
  adam_step_(param, from_vector(g), m, v, 1, o);
  const Vec p = param.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(p[i], -0.1 * g[i] / (std::abs(g[i]) + o.eps), 1e-15) << i;
}

TEST_P(OptimTest, FailedGradientPoisonsTheUpdatedParameter) {
  // A failure upstream of an optimizer step leaves the parameter failed
  // rather than silently updated with garbage.
  const Tensor x = ones({3, 2}), labels = from_vector(std::vector<std::int32_t>{0, 5, 1});
  Tensor w = ones({4, 2}), velocity = zeros({4, 2});
  const Tensor logits = linear(x, w, zeros({4}));
  const Tensor dlogits = softmax_cross_entropy_backward(softmax_cross_entropy(logits, labels).probs, labels);
  sgd_step_(w, linear_backward_weight(dlogits, x), velocity, {0.1});
  EXPECT_THROW(w.wait_to_read(), BackendError);
  EXPECT_THROW(velocity.wait_to_read(), BackendError);
  eng().wait_all();
}

TEST_P(OptimTest, BadOptimizerArgumentsThrowAndEnqueueNothing) {
  Tensor p = ones({3}), g = ones({3}), s1 = zeros({3}), s2 = zeros({3});
  Tensor pd = ones({3}, {DType::f64}), wrong = zeros({4}), pi = ones({3}, {DType::i32});
  Tensor other = zeros({3}, {DType::f32, cpu(1)});
  eng().wait_all();
  const double nan = std::nan("");

  EXPECT_REJECTED(ValueError, sgd_step_(p, g, s1, {-0.1}));
  EXPECT_REJECTED(ValueError, sgd_step_(p, g, s1, {nan}));
  EXPECT_REJECTED(ValueError, sgd_step_(p, g, s1, {0.1, -0.5}));
  EXPECT_REJECTED(ValueError, sgd_step_(p, g, s1, {0.1, 0.0, -1.0}));
  EXPECT_REJECTED(ValueError, sgd_step_(p, g, p, {}));
  EXPECT_REJECTED(ValueError, sgd_step_(p, s1, s1, {}));
  EXPECT_REJECTED(ShapeError, sgd_step_(p, g, wrong, {}));
  EXPECT_REJECTED(ShapeError, sgd_step_(p, wrong, s1, {}));
  EXPECT_REJECTED(DTypeError, sgd_step_(p, pd, s1, {}));
  EXPECT_REJECTED(DTypeError, sgd_step_(pi, pi, pi, {}));
  EXPECT_REJECTED(DeviceError, sgd_step_(p, g, other, {}));

  auto adam = [&](AdamOptions o, std::int64_t step = 1) { adam_step_(p, g, s1, s2, step, o); };
  AdamOptions o;
  EXPECT_REJECTED(ValueError, adam(o, 0));
  EXPECT_REJECTED(ValueError, adam(o, -3));
  const AdamOptions bad_options[] = {{.lr = -1e-3}, {.beta1 = 1.0},  {.beta2 = -0.1},
                                     {.beta2 = nan}, {.eps = 0.0},   {.weight_decay = -1.0}};
  for (const AdamOptions& bad : bad_options) {
    SCOPED_TRACE(::testing::Message() << "lr " << bad.lr << " beta1 " << bad.beta1 << " beta2 " << bad.beta2
                                      << " eps " << bad.eps << " weight_decay " << bad.weight_decay);
    EXPECT_REJECTED(ValueError, adam(bad));
  }
  EXPECT_REJECTED(ValueError, adam_step_(p, g, s1, s1, 1, {}));
  EXPECT_REJECTED(ValueError, adam_step_(p, g, p, s2, 1, {}));
  EXPECT_REJECTED(ShapeError, adam_step_(p, g, s1, wrong, 1, {}));
  EXPECT_REJECTED(DTypeError, adam_step_(p, g, s1, pd, 1, {}));

  std::string msg = message_of<ValueError>([&] {
    AdamOptions bad;
    bad.eps = -1e-8;
    adam(bad);
  });
  EXPECT_NE(msg.find("adam_step_"), std::string::npos) << msg;
  EXPECT_NE(msg.find("eps"), std::string::npos) << msg;
  EXPECT_NE(msg.find("-1e-08"), std::string::npos) << msg;
  // Nothing above touched the parameter.
  EXPECT_EQ(p.to_vector<float>(), std::vector<float>(3, 1.0f));
}

}  // namespace
}  // namespace tide::testing
