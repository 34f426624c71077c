// nn ops: gradients against central finite differences (f64), forward
// values against host references (f32, f64), kernel failures at barriers and
// frontend checks. The optimizers are in optim_test.cc.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ops_test_util.h"

namespace tide::testing {
namespace {

using NnTest = OpsTest;
TIDE_OPS_TEST_SUITE(NnTest);

using Vec = std::vector<double>;

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

// ---------------------------------------------------------------------------
// Host references, in double.

/// c[m, n] = op(a) op(b), op(a) [m, k], op(b) [k, n]; a stored [k, m] when
/// ta, b stored [n, k] when tb. With `magnitude`, sums |a||b| instead: the
/// scale of a dot product's rounding error in any order.
template <typename T>
Vec host_matmul(const std::vector<T>& a, const std::vector<T>& b, std::int64_t m, std::int64_t k,
                std::int64_t n, bool ta, bool tb, bool magnitude = false) {
  Vec c(at(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double x = static_cast<double>(a[at(ta ? p * m + i : i * k + p)]);
        const double y = static_cast<double>(b[at(tb ? j * k + p : p * n + j)]);
        acc += magnitude ? std::abs(x * y) : x * y;
      }
      c[at(i * n + j)] = acc;
    }
  return c;
}

/// Every element within rel * scale[i] (+ abs) of want[i].
template <typename T>
void expect_close(const std::vector<T>& got, const Vec& want, const Vec& scale, double rel,
                  double abs = 0.0) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(static_cast<double>(got[i]), want[i], rel * scale[i] + abs) << "element " << i;
}

/// Per-row losses and the probabilities of a stable softmax cross-entropy.
struct HostCe {
  Vec row_loss, probs;
  double mean() const {
    double s = 0;
    for (double l : row_loss) s += l;
    return s / static_cast<double>(row_loss.size());
  }
};

template <typename T>
HostCe host_ce(const std::vector<T>& logits, const std::vector<std::int32_t>& labels, std::int64_t n,
               std::int64_t c) {
  HostCe r;
  for (std::int64_t i = 0; i < n; ++i) {
    const T* x = logits.data() + i * c;
    const double mx = *std::max_element(x, x + c);
    double s = 0;
    for (std::int64_t j = 0; j < c; ++j) s += std::exp(x[j] - mx);
    for (std::int64_t j = 0; j < c; ++j) r.probs.push_back(std::exp(x[j] - mx) / s);
    r.row_loss.push_back(std::log(s) - (x[labels[at(i)]] - mx));
  }
  return r;
}

// ---------------------------------------------------------------------------
// Gradient checks (f64). Central differences with step 1e-6: the objectives
// are O(1), so rounding contributes ~1e-16 / 1e-6 = 1e-10 and truncation
// ~eps^2 = 1e-12; every element must agree to 1e-6 relative plus 1e-8.

constexpr double kFdStep = 1e-6, kFdRel = 1e-6, kFdAbs = 1e-8;

/// Checks `analytic` against central differences of `f` at `params`.
template <typename F>
void expect_gradient(const char* what, Vec params, const Vec& analytic, F f) {
  ASSERT_EQ(params.size(), analytic.size()) << what;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const double saved = params[i];
    params[i] = saved + kFdStep;
    const double up = f(params);
    params[i] = saved - kFdStep;
    const double down = f(params);
    params[i] = saved;
    const double numeric = (up - down) / (2 * kFdStep);
    EXPECT_NEAR(analytic[i], numeric, kFdRel * std::abs(numeric) + kFdAbs) << what << " element " << i;
  }
}

Tensor f64(const Vec& v, const Shape& s) { return from_vector(v, s); }

TEST_P(NnTest, LinearGradientsMatchFiniteDifferences) {
  const std::int64_t n = 4, in = 5, out = 3;
  const Vec xv = random_values<double>(at(n * in), 1), wv = random_values<double>(at(out * in), 2);
  const Vec bv = random_values<double>(at(out), 3), rv = random_values<double>(at(n * out), 4);
  const Tensor r = f64(rv, {n, out});
  // Objective sum(y * r), so dy = r.
  auto objective = [&](const Vec& x, const Vec& w, const Vec& b) {
    return sum(mul(linear(f64(x, {n, in}), f64(w, {out, in}), f64(b, {out})), r)).item<double>();
  };
  const Tensor x = f64(xv, {n, in}), w = f64(wv, {out, in});
  expect_gradient("dx", xv, linear_backward_input(r, w).to_vector<double>(),
                  [&](const Vec& p) { return objective(p, wv, bv); });
  expect_gradient("dw", wv, linear_backward_weight(r, x).to_vector<double>(),
                  [&](const Vec& p) { return objective(xv, p, bv); });
  expect_gradient("db", bv, linear_backward_bias(r).to_vector<double>(),
                  [&](const Vec& p) { return objective(xv, wv, p); });
}

TEST_P(NnTest, ReluGradientMatchesFiniteDifferences) {
  // Magnitudes in [0.1, 1] with random signs: far from the kink at 0.
  Vec xv = random_values<double>(30, 5, 0.1, 1.0);
  const Vec signs = random_values<double>(30, 6);
  for (std::size_t i = 0; i < xv.size(); ++i) xv[i] *= signs[i] < 0 ? -1.0 : 1.0;
  const Vec rv = random_values<double>(30, 7);
  const Tensor r = f64(rv, {5, 6});
  auto objective = [&](const Vec& x) { return sum(mul(relu(f64(x, {5, 6})), r)).item<double>(); };
  const Vec dx = relu_backward(r, f64(xv, {5, 6})).to_vector<double>();
  expect_gradient("dx", xv, dx, objective);
  for (std::size_t i = 0; i < dx.size(); ++i) EXPECT_EQ(dx[i], xv[i] > 0 ? rv[i] : 0.0) << i;
  // At exactly 0 the gradient is 0 (as PyTorch's).
  EXPECT_EQ(relu_backward(ones({2}, {DType::f64}), zeros({2}, {DType::f64})).to_vector<double>(),
            (Vec{0.0, 0.0}));
}

TEST_P(NnTest, SoftmaxCrossEntropyGradientMatchesFiniteDifferences) {
  const std::int64_t n = 5, c = 4;
  const Vec lv = random_values<double>(at(n * c), 8, -3, 3);
  const Tensor labels = from_vector(random_values<std::int32_t>(at(n), 9, 0, c - 1));
  auto objective = [&](const Vec& l) { return softmax_cross_entropy(f64(l, {n, c}), labels).loss.item<double>(); };
  SoftmaxCrossEntropy ce = softmax_cross_entropy(f64(lv, {n, c}), labels);
  expect_gradient("dlogits", lv, softmax_cross_entropy_backward(ce.probs, labels).to_vector<double>(),
                  objective);
}

TEST_P(NnTest, TwoLayerMlpGradientsMatchFiniteDifferences) {
  const std::int64_t n = 6, in = 4, hidden = 5, classes = 3;
  const Vec xv = random_values<double>(at(n * in), 10);
  const Vec w1v = random_values<double>(at(hidden * in), 11), b1v = random_values<double>(at(hidden), 12);
  const Vec w2v = random_values<double>(at(classes * hidden), 13), b2v = random_values<double>(at(classes), 14);
  const Tensor x = f64(xv, {n, in});
  const Tensor labels = from_vector(random_values<std::int32_t>(at(n), 15, 0, classes - 1));
  auto loss = [&](const Vec& w1, const Vec& b1, const Vec& w2, const Vec& b2) {
    Tensor h = relu(linear(x, f64(w1, {hidden, in}), f64(b1, {hidden})));
    return softmax_cross_entropy(linear(h, f64(w2, {classes, hidden}), f64(b2, {classes})), labels)
        .loss.item<double>();
  };

  // Forward and backward, as a trainer writes them.
  const Tensor w1 = f64(w1v, {hidden, in}), b1 = f64(b1v, {hidden});
  const Tensor w2 = f64(w2v, {classes, hidden}), b2 = f64(b2v, {classes});
  Tensor z1 = linear(x, w1, b1), h = relu(z1), logits = linear(h, w2, b2);
  SoftmaxCrossEntropy ce = softmax_cross_entropy(logits, labels);
  Tensor dlogits = softmax_cross_entropy_backward(ce.probs, labels);
  Tensor dw2 = linear_backward_weight(dlogits, h), db2 = linear_backward_bias(dlogits);
  Tensor dz1 = relu_backward(linear_backward_input(dlogits, w2), z1);
  Tensor dw1 = linear_backward_weight(dz1, x), db1 = linear_backward_bias(dz1);

  // The differences must not step across relu's kink.
  for (double z : z1.to_vector<double>()) ASSERT_GT(std::abs(z), 1e-3);
  EXPECT_NEAR(ce.loss.item<double>(), loss(w1v, b1v, w2v, b2v), 1e-15);
  expect_gradient("dw1", w1v, dw1.to_vector<double>(), [&](const Vec& p) { return loss(p, b1v, w2v, b2v); });
  expect_gradient("db1", b1v, db1.to_vector<double>(), [&](const Vec& p) { return loss(w1v, p, w2v, b2v); });
  expect_gradient("dw2", w2v, dw2.to_vector<double>(), [&](const Vec& p) { return loss(w1v, b1v, p, b2v); });
  expect_gradient("db2", b2v, db2.to_vector<double>(), [&](const Vec& p) { return loss(w1v, b1v, w2v, p); });
}

// ---------------------------------------------------------------------------
// Forward values against host references.

/// Tolerances relative to the sum of magnitudes (see linalg_test.cc): f64
/// rounding is ~1e-16 per term, f32 ~6e-8 per term over at most ~70 terms.
template <typename T>
constexpr double kRel = std::is_same_v<T, float> ? 1e-5 : 1e-12;

TEST_P(NnTest, LinearIsOneOpAndMatchesHost) {
  for_each_floating([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    const std::int64_t n = 7, in = 9, out = 5;
    const std::vector<T> xv = random_values<T>(at(n * in), 20), wv = random_values<T>(at(out * in), 21);
    const std::vector<T> bv = random_values<T>(at(out), 22);
    const Tensor x = from_vector(xv, {n, in}, cpu(1)), w = from_vector(wv, {out, in}, cpu(1));
    const Tensor b = from_vector(bv, {out}, cpu(1));
    const std::uint64_t before = pushed();
    Tensor y = linear(x, w, b);
    EXPECT_EQ(pushed() - before, 1u);
    EXPECT_EQ(y.shape(), (Shape{n, out}));
    EXPECT_EQ(y.dtype(), dtype_v<T>);
    EXPECT_EQ(y.device(), cpu(1));
    Vec want = host_matmul(xv, wv, n, in, out, false, true);
    Vec scale = host_matmul(xv, wv, n, in, out, false, true, true);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < out; ++j) {
        want[at(i * out + j)] += bv[at(j)];
        scale[at(i * out + j)] += std::abs(bv[at(j)]);
      }
    expect_close(y.to_vector<T>(), want, scale, kRel<T>);
  });
}

TEST_P(NnTest, LinearBackwardMatchesHost) {
  for_each_floating([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    const std::int64_t n = 11, in = 6, out = 4;
    const std::vector<T> dyv = random_values<T>(at(n * out), 23), xv = random_values<T>(at(n * in), 24);
    const std::vector<T> wv = random_values<T>(at(out * in), 25);
    const Tensor dy = from_vector(dyv, {n, out}), x = from_vector(xv, {n, in}), w = from_vector(wv, {out, in});

    Tensor dw = linear_backward_weight(dy, x);
    EXPECT_EQ(dw.shape(), (Shape{out, in}));
    expect_close(dw.to_vector<T>(), host_matmul(dyv, xv, out, n, in, true, false),
                 host_matmul(dyv, xv, out, n, in, true, false, true), kRel<T>);

    Tensor dx = linear_backward_input(dy, w);
    EXPECT_EQ(dx.shape(), (Shape{n, in}));
    expect_close(dx.to_vector<T>(), host_matmul(dyv, wv, n, out, in, false, false),
                 host_matmul(dyv, wv, n, out, in, false, false, true), kRel<T>);

    // db sums in double in row order and rounds once: exactly this loop.
    Tensor db = linear_backward_bias(dy);
    EXPECT_EQ(db.shape(), (Shape{out}));
    std::vector<T> want(at(out));
    for (std::int64_t j = 0; j < out; ++j) {
      double acc = 0;
      for (std::int64_t i = 0; i < n; ++i) acc += dyv[at(i * out + j)];
      want[at(j)] = static_cast<T>(acc);
    }
    EXPECT_EQ(db.to_vector<T>(), want);
  });
  // No rows: zero gradients for w and b.
  EXPECT_EQ(linear_backward_bias(zeros({0, 3})).to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(linear_backward_weight(zeros({0, 2}), zeros({0, 3})).to_vector<float>(),
            std::vector<float>(6, 0.0f));
}

template <typename T>
void check_transposed_matmul(std::int64_t m, std::int64_t k, std::int64_t n, std::uint32_t seed) {
  const std::vector<T> av = random_values<T>(at(m * k), seed, -20, 20);
  const std::vector<T> bv = random_values<T>(at(k * n), seed + 1, -20, 20);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("trans_a ") + (ta ? "1" : "0") + ", trans_b " + (tb ? "1" : "0"));
      const Tensor a = from_vector(av, ta ? Shape{k, m} : Shape{m, k});
      const Tensor b = from_vector(bv, tb ? Shape{n, k} : Shape{k, n});
      Tensor c = matmul(a, b, ta, tb);
      EXPECT_EQ(c.shape(), (Shape{m, n}));
      const Vec want = host_matmul(av, bv, m, k, n, ta, tb);
      if constexpr (std::is_integral_v<T>) {
        // Small integers: exact in double and in i32.
        std::vector<T> got = c.template to_vector<T>();
        for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], static_cast<T>(want[i])) << i;
      } else {
        expect_close(c.template to_vector<T>(), want, host_matmul(av, bv, m, k, n, ta, tb, true), kRel<T>);
      }
    }
  // The two-argument form is the untransposed one.
  const Tensor a = from_vector(av, {m, k}), b = from_vector(bv, {k, n});
  EXPECT_EQ(matmul(a, b).template to_vector<T>(), matmul(a, b, false, false).template to_vector<T>());
}

TEST_P(NnTest, MatmulWithEachTransposeCombination) {
  {
    SCOPED_TRACE("f32");
    check_transposed_matmul<float>(13, 21, 8, 30);
  }
  {
    SCOPED_TRACE("f64");
    check_transposed_matmul<double>(9, 17, 12, 32);
  }
  {
    SCOPED_TRACE("i32");
    check_transposed_matmul<std::int32_t>(5, 7, 6, 34);
  }
  // k = 0 transposed: an empty sum.
  EXPECT_EQ(matmul(ones({0, 3}), ones({2, 0}), true, true).to_vector<float>(), std::vector<float>(6, 0.0f));
}

TEST_P(NnTest, SoftmaxCrossEntropyIsOneOpAndMatchesHost) {
  for_each_floating([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    const std::int64_t n = 9, c = 7;
    const std::vector<T> lv = random_values<T>(at(n * c), 40, -8, 8);
    const std::vector<std::int32_t> yv = random_values<std::int32_t>(at(n), 41, 0, c - 1);
    const Tensor logits = from_vector(lv, {n, c}), labels = from_vector(yv);
    const std::uint64_t before = pushed();
    SoftmaxCrossEntropy ce = softmax_cross_entropy(logits, labels);
    EXPECT_EQ(pushed() - before, 1u);
    EXPECT_EQ(ce.loss.shape(), Shape{});
    EXPECT_EQ(ce.loss.dtype(), dtype_v<T>);
    EXPECT_EQ(ce.probs.shape(), (Shape{n, c}));
    const HostCe want = host_ce(lv, yv, n, c);
    // Computed in double, rounded once to T: f32 within ~1 ulp.
    const double rel = std::is_same_v<T, float> ? 2e-7 : 1e-14;
    EXPECT_NEAR(ce.loss.item<double>(), want.mean(), rel * want.mean());
    expect_close(ce.probs.to_vector<T>(), want.probs, want.probs, rel);

    const std::vector<T> d = softmax_cross_entropy_backward(ce.probs, labels).to_vector<T>();
    const std::vector<T> p = ce.probs.to_vector<T>();
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < c; ++j) {
        const double onehot = j == yv[at(i)] ? 1.0 : 0.0;
        EXPECT_EQ(d[at(i * c + j)], static_cast<T>((p[at(i * c + j)] - onehot) / static_cast<double>(n)));
      }
  });
}

TEST_P(NnTest, SoftmaxCrossEntropyIsStableForLargeLogits) {
  // exp(1000) overflows even a double; a stable kernel never computes it.
  // Row 0: the label's logit is 2000 below the max, loss 2000. Row 1: the
  // label is the max by 1000, loss log(1 + e^-1000 + e^-2000) = 0 in double.
  // Row 2: two equal maxima, loss log 2.
  const Vec lv{1000, -1000, 0, -1000, 1000, 0, 1000, 1000, -1000};
  const std::vector<std::int32_t> yv{1, 1, 0};
  const double want = (2000.0 + 0.0 + std::log(2.0)) / 3.0;
  const Vec want_probs{1, 0, 0, 0, 1, 0, 0.5, 0.5, 0};
  for_each_floating([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    std::vector<T> l(lv.begin(), lv.end());
    SoftmaxCrossEntropy ce = softmax_cross_entropy(from_vector(l, {3, 3}), from_vector(yv));
    const double loss = ce.loss.item<double>();
    EXPECT_TRUE(std::isfinite(loss));
    EXPECT_NEAR(loss, want, (std::is_same_v<T, float> ? 1e-7 : 1e-15) * want);
    EXPECT_EQ(ce.probs.to_vector<double>(), want_probs);
  });
}

TEST_P(NnTest, ArgmaxTakesTheFirstMaximumAlongAnyAxis) {
  const Tensor t = from_vector(std::vector<float>{3, 1, 3, 2, 2, 2, -1, 5, 5}, {3, 3});
  EXPECT_EQ(argmax(t, 1).to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 0, 1}));
  EXPECT_EQ(argmax(t, -1, DType::i32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 0, 1}));
  EXPECT_EQ(argmax(t, 0).to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 2, 2}));
  EXPECT_EQ(argmax(t, -2).dtype(), DType::i64);  // torch's
  EXPECT_EQ(argmax(t, -2, DType::i32).dtype(), DType::i32);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(argmax(from_vector(std::vector<float>{1, nan, 5, nan}), 0).item<std::int64_t>(), 1);

  // Random small integers (many ties) in every dtype, every axis.
  const Shape shape{3, 4, 5};
  const std::vector<std::int32_t> iv = random_values<std::int32_t>(60, 50, 0, 3);
  for (DType dt : {DType::f32, DType::f64, DType::i32}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor a = dispatch_dtype(dt, [&](auto tag) {
      using T = decltype(tag);
      return from_vector(std::vector<T>(iv.begin(), iv.end()), shape);
    });
    for (int axis = -3; axis < 3; ++axis) {
      SCOPED_TRACE("axis " + std::to_string(axis));
      const int ax = axis < 0 ? axis + 3 : axis;
      std::int64_t outer = 1, inner = 1;
      for (int d = 0; d < ax; ++d) outer *= shape[d];
      for (int d = ax + 1; d < 3; ++d) inner *= shape[d];
      const std::int64_t len = shape[ax];
      std::vector<std::int32_t> want;
      for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t j = 0; j < inner; ++j) {
          std::int32_t best = 0;
          for (std::int64_t k = 1; k < len; ++k)
            if (iv[at((o * len + k) * inner + j)] > iv[at((o * len + best) * inner + j)])
              best = static_cast<std::int32_t>(k);
          want.push_back(best);
        }
      Tensor got = argmax(a, axis, DType::i32);
      EXPECT_EQ(got.shape(), shape.without(ax));
      EXPECT_EQ(got.to_vector<std::int32_t>(), want);
      EXPECT_EQ(argmax(a, axis).to_vector<std::int32_t>(), want);  // the i64 kernel, same indices
    }
  }
}

TEST_P(NnTest, EqAndAccuracy) {
  const std::vector<std::int32_t> av = random_values<std::int32_t>(40, 60, 0, 2);
  const std::vector<std::int32_t> bv = random_values<std::int32_t>(40, 61, 0, 2);
  for (DType dt : {DType::f32, DType::f64, DType::i32}) {
    SCOPED_TRACE(dtype_name(dt));
    dispatch_dtype(dt, [&](auto tag) {
      using T = decltype(tag);
      Tensor e = eq(from_vector(std::vector<T>(av.begin(), av.end()), {8, 5}),
                    from_vector(std::vector<T>(bv.begin(), bv.end()), {8, 5}));
      EXPECT_EQ(e.dtype(), DType::b8);
      EXPECT_EQ(e.shape(), (Shape{8, 5}));
      std::vector<bool> got = e.template to_vector<bool>();
      for (std::size_t i = 0; i < av.size(); ++i) EXPECT_EQ(got[i], av[i] == bv[i]) << i;
    });
  }
  const double nan = std::nan("");
  EXPECT_EQ(eq(from_vector(Vec{nan, 0.0}), from_vector(Vec{nan, -0.0})).to_vector<bool>(), (std::vector<bool>{false, true}));

  // accuracy = sum(eq(argmax(logits, 1), labels)).
  const std::int64_t n = 50, c = 4;
  const std::vector<float> lv = random_values<float>(at(n * c), 62);
  const std::vector<std::int32_t> yv = random_values<std::int32_t>(at(n), 63, 0, c - 1);
  std::int32_t correct = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float* row = lv.data() + i * c;
    correct += (std::max_element(row, row + c) - row) == yv[at(i)];
  }
  // The sum of a bool tensor counts its true values, in i64 (as torch).
  Tensor acc = sum(eq(argmax(from_vector(lv, {n, c}), 1, DType::i32), from_vector(yv)));
  EXPECT_EQ(acc.dtype(), DType::i64);
  EXPECT_EQ(acc.item<std::int32_t>(), correct);
  EXPECT_GT(correct, 0);
}

// ---------------------------------------------------------------------------
// Failures.

TEST_P(NnTest, LabelOutOfRangeSurfacesAtTheBarrier) {
  const Tensor logits = rand({3, 4}, {DType::f64}, {7});
  const Tensor bad = from_vector(std::vector<std::int32_t>{0, 7, 1});
  SoftmaxCrossEntropy ce = softmax_cross_entropy(logits, bad);  // pushed fine
  Tensor later = mul(ce.loss, 2.0);
  try {
    later.item<double>();
    FAIL() << "expected a BackendError";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.provenance().op, "softmax_cross_entropy");
    const std::string msg = e.what();
    EXPECT_NE(msg.find("label 7"), std::string::npos) << msg;
    EXPECT_NE(msg.find("row 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[0, 4)"), std::string::npos) << msg;
  }
  EXPECT_THROW(ce.probs.wait_to_read(), BackendError);

  const Tensor good = from_vector(std::vector<std::int32_t>{0, 3, 1});
  const Tensor probs = softmax_cross_entropy(logits, good).probs;
  const Tensor negative = from_vector(std::vector<std::int32_t>{0, 1, -2});
  const std::string msg = message_of<BackendError>(
      [&] { softmax_cross_entropy_backward(probs, negative).wait_to_read(); });
  EXPECT_NE(msg.find("label -2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("row 2"), std::string::npos) << msg;
  eng().wait_all();  // every error was reported at its barrier

  // The engine stays usable.
  EXPECT_TRUE(std::isfinite(softmax_cross_entropy(logits, good).loss.item<double>()));
}

TEST_P(NnTest, BadInputThrowsAndEnqueuesNothing) {
  Tensor x = ones({4, 3}), w = ones({2, 3}), b = ones({2}), dy = ones({4, 2});
  Tensor xd = ones({4, 3}, {DType::f64}), xi = ones({4, 3}, {DType::i32});
  Tensor wi = ones({2, 3}, {DType::i32}), bi = ones({2}, {DType::i32}), dyi = ones({4, 2}, {DType::i32});
  Tensor w_other = ones({2, 3}, {DType::f32, cpu(1)}), x_other = ones({4, 3}, {DType::f32, cpu(1)});
  Tensor vec3 = ones({3}), vec4 = ones({4}), vec8 = ones({8}), row2 = ones({1, 2});
  Tensor w24 = ones({2, 4}), w33 = ones({3, 3}), dy52 = ones({5, 2});
  Tensor no_classes = ones({4, 0}), no_rows = ones({0, 3}), five_rows = ones({5, 3}), empty_axis = ones({3, 0});
  Tensor scalar = full(Shape{}, 1.0), undefined;
  Tensor labels = from_vector(std::vector<std::int32_t>{0, 1, 1, 0});
  Tensor no_labels = from_vector(std::vector<std::int32_t>{});
  eng().wait_all();

  EXPECT_REJECTED(ShapeError, linear(vec3, w, b));
  EXPECT_REJECTED(ShapeError, linear(x, w24, b));
  EXPECT_REJECTED(ShapeError, linear(x, w, vec3));
  EXPECT_REJECTED(ShapeError, linear(x, w, row2));
  EXPECT_REJECTED(DTypeError, linear(xd, w, b));
  EXPECT_REJECTED(DTypeError, linear(xi, wi, bi));
  EXPECT_REJECTED(DeviceError, linear(x, w_other, b));
  EXPECT_REJECTED(UndefinedTensorError, linear(x, w, undefined));
  EXPECT_REJECTED(ShapeError, linear_backward_weight(dy52, x));
  EXPECT_REJECTED(DTypeError, linear_backward_weight(dy, xd));
  EXPECT_REJECTED(ShapeError, linear_backward_input(dy, w33));
  EXPECT_REJECTED(ShapeError, linear_backward_bias(vec8));
  EXPECT_REJECTED(DTypeError, linear_backward_bias(dyi));
  EXPECT_REJECTED(ShapeError, relu_backward(dy, x));
  EXPECT_REJECTED(DTypeError, relu_backward(x, xd));
  EXPECT_REJECTED(DeviceError, relu_backward(x, x_other));

  EXPECT_REJECTED(ShapeError, matmul(x, x, false, false));
  EXPECT_REJECTED(ShapeError, matmul(x, x, true, true));
  EXPECT_REJECTED(DTypeError, matmul(x, xd, true, false));
  EXPECT_REJECTED(DeviceError, matmul(x, x_other, true, false));

  EXPECT_REJECTED(ShapeError, softmax_cross_entropy(vec4, labels));
  EXPECT_REJECTED(ShapeError, softmax_cross_entropy(no_classes, labels));
  EXPECT_REJECTED(ShapeError, softmax_cross_entropy(no_rows, no_labels));
  EXPECT_REJECTED(ShapeError, softmax_cross_entropy(five_rows, labels));
  EXPECT_REJECTED(DTypeError, softmax_cross_entropy(x, vec4));
  EXPECT_REJECTED(DTypeError, softmax_cross_entropy(xi, labels));
  EXPECT_REJECTED(DeviceError, softmax_cross_entropy(x_other, labels));
  EXPECT_REJECTED(ShapeError, softmax_cross_entropy_backward(five_rows, labels));
  EXPECT_REJECTED(DTypeError, softmax_cross_entropy_backward(x, vec4));

  EXPECT_REJECTED(ShapeError, argmax(x, 2));
  EXPECT_REJECTED(ShapeError, argmax(x, -3));
  EXPECT_REJECTED(ShapeError, argmax(scalar, 0));
  EXPECT_REJECTED(ValueError, argmax(empty_axis, 1));
  EXPECT_REJECTED(UndefinedTensorError, argmax(undefined, 0));
  EXPECT_REJECTED(DTypeError, argmax(x, 0, DType::f32));
  EXPECT_REJECTED(ShapeError, eq(x, w));
  EXPECT_REJECTED(DTypeError, eq(x, xd));
  EXPECT_REJECTED(DeviceError, eq(w, w_other));

  std::string msg = message_of<ShapeError>([&] { linear(x, w24, b); });
  EXPECT_NE(msg.find("linear"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 4]"), std::string::npos) << msg;
  msg = message_of<ShapeError>([&] { matmul(x, x, true, true); });
  EXPECT_NE(msg.find("[4, 3]^T"), std::string::npos) << msg;
  msg = message_of<DTypeError>([&] { softmax_cross_entropy(x, vec4); });
  EXPECT_NE(msg.find("i32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f32"), std::string::npos) << msg;
  msg = message_of<DeviceError>([&] { linear(x, w_other, b); });
  EXPECT_NE(msg.find("'w' is on cpu:1"), std::string::npos) << msg;
}

}  // namespace
}  // namespace tide::testing
