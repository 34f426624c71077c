// The nn ops on a CUDA device against the same ops on the CPU: forward
// values, gradients of a 2-layer MLP, optimizer steps, argmax, and what the
// GPU does with a label out of range or NaN inputs.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuda_nn_test_util.h"
#if TIDE_HAVE_CUDA  // the one-launch counts
#include "../../ops/src/cuda/nn_kernels.h"
#include "../../ops/src/cuda/reduction_kernels.h"
#endif

namespace tide::testing {
namespace {

using CudaNnTest = CudaOpsTest;
TIDE_CUDA_OPS_TEST_SUITE(CudaNnTest);

template <typename F>
void for_each_floating(F f) {
  f(float{});
  f(double{});
}

/// The linear layer's output and its three backward halves, once per
/// device, at shapes that are not multiples of any block size.
TEST_P(CudaNnTest, LinearAndItsBackwardMatchCpu) {
  TIDE_REQUIRE_GPU();
  start_engine();
  for_each_floating([&](auto tag) {
    using T = decltype(tag);
    for (const auto& [n, in, out] : {std::array<std::int64_t, 3>{1, 1, 1}, {37, 65, 19}, {300, 7, 129}}) {
      SCOPED_TRACE(std::string(dtype_name(dtype_v<T>)) + " n " + std::to_string(n) + " in " +
                   std::to_string(in) + " out " + std::to_string(out));
      const std::vector<T> xv = random_values<T>(idx(n * in), 1), wv = random_values<T>(idx(out * in), 2);
      const std::vector<T> bv = random_values<T>(idx(out), 3), dyv = random_values<T>(idx(n * out), 4);
      const Tensor x = from_vector(xv, {n, in}), w = from_vector(wv, {out, in});
      const Tensor b = from_vector(bv, {out}), dy = from_vector(dyv, {n, out});
      const Tensor gx = on_gpu(x), gw = on_gpu(w), gb = on_gpu(b), gdy = on_gpu(dy);

      // y = x w^T + b: the gemm's bound, plus |b| for the bias added after
      // the gemm's rounding (one more rounding of the sum).
      const Tensor y = linear(gx, gw, gb);
      EXPECT_EQ(y.device(), cuda(0));
      std::vector<double> scale = magnitude_matmul(xv, wv, n, in, out, false, true);
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < out; ++j) scale[idx(i * out + j)] += std::abs(bv[idx(j)]);
      expect_near_scaled(y.to_vector<T>(), linear(x, w, b).to_vector<T>(), scale,
                         gemm_rel_tolerance<T>(in + 1));

      expect_near_scaled(linear_backward_weight(gdy, gx).to_vector<T>(),
                         linear_backward_weight(dy, x).to_vector<T>(),
                         magnitude_matmul(dyv, xv, out, n, in, true, false), gemm_rel_tolerance<T>(n));
      expect_near_scaled(linear_backward_input(gdy, gw).to_vector<T>(),
                         linear_backward_input(dy, w).to_vector<T>(),
                         magnitude_matmul(dyv, wv, n, out, in, false, false), gemm_rel_tolerance<T>(out));
      // The column sums run in double on both devices, the GPU's in chunks
      // of rows (the reduction kernels' order): equal up to the rounding of
      // a sum of n terms, against the column's sum of magnitudes.
      std::vector<double> bias_scale(idx(out), 0.0);
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < out; ++j) bias_scale[idx(j)] += std::abs(dyv[idx(i * out + j)]);
      expect_near_scaled(linear_backward_bias(gdy).to_vector<T>(), linear_backward_bias(dy).to_vector<T>(),
                         bias_scale, gemm_rel_tolerance<T>(n));
    }
  });
  // No rows: zero gradients for w and b, as on the CPU.
  const Tensor none = on_gpu(from_vector(std::vector<float>{}, {0, 3}));
  const Tensor none2 = on_gpu(from_vector(std::vector<float>{}, {0, 2}));
  EXPECT_EQ(linear_backward_bias(none).to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(linear_backward_weight(none2, none).to_vector<float>(), std::vector<float>(6, 0.0f));
}

/// With w = 0 the product is exactly 0, so linear's output is its bias on
/// every row, exactly (the bias values are not zeros, whose sign == would
/// not tell apart): which bias element each column gets, over rows of
/// a whole number of 16-byte packs (the packed kernel, f32 and f64), rows
/// that are not (the element kernel), and a bias at an unaligned address.
TEST_P(CudaNnTest, LinearAddsItsBiasToEveryRowExactly) {
  TIDE_REQUIRE_GPU();
  start_engine();
  for_each_floating([&](auto tag) {
    using T = decltype(tag);
    for (const auto& [n, in, out] : {std::array<std::int64_t, 3>{1, 3, 4}, {37, 5, 64}, {513, 2, 4096},
                                     {9, 4, 6}, {300, 7, 129}, {1100, 1, 1000}}) {
      SCOPED_TRACE(std::string(dtype_name(dtype_v<T>)) + " n " + std::to_string(n) + " out " + std::to_string(out));
      const std::vector<T> xv = random_values<T>(idx(n * in), 5), bv = random_values<T>(idx(out + 1), 6);
      std::vector<T> want(idx(n * out));
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < out; ++c) want[idx(r * out + c)] = bv[idx(c)];
      const Tensor gx = on_gpu(from_vector(xv, {n, in}));
      const Tensor gw = on_gpu(from_vector(std::vector<T>(idx(out * in), T(0)), {out, in}));
      const Tensor gb = on_gpu(from_vector(bv, {out + 1}));
      expect_same(linear(gx, gw, slice(gb, 0, 0, out)).template to_vector<T>(), want);
      // The bias from element 1: 4 or 8 bytes past a 16-byte boundary.
      std::vector<T> want_shifted(idx(n * out));
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < out; ++c) want_shifted[idx(r * out + c)] = bv[idx(c + 1)];
      expect_same(linear(gx, gw, slice(gb, 0, 1, out + 1)).template to_vector<T>(), want_shifted);
    }
  });
}

TEST_P(CudaNnTest, ReluBackwardIsExact) {
  TIDE_REQUIRE_GPU();
  start_engine();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Sizes around the block size and one past the capped grid (grid-stride).
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{255}, std::int64_t{1000},
                         (std::int64_t{1} << 24) + 7}) {
    SCOPED_TRACE("n " + std::to_string(n));
    std::vector<float> xv = random_values<float>(idx(n), 10), dyv = random_values<float>(idx(n), 11);
    xv[0] = 0.0f;  // the gradient at the kink is 0
    if (n > 1) xv[1] = static_cast<float>(nan);
    const Tensor x = from_vector(xv), dy = from_vector(dyv);
    expect_same(relu_backward(on_gpu(dy), on_gpu(x)).to_vector<float>(), relu_backward(dy, x).to_vector<float>());
    if (n < 3) continue;
    // dy from element 1, 2 or 4, x from element 1: inputs off a 16-byte
    // boundary by different amounts, and (4) one aligned beside one not:
    // the element kernel each time.
    for (std::int64_t a : {1, 2, 4}) {
      if (n <= a) continue;
      SCOPED_TRACE("from element " + std::to_string(a) + " of dy, 1 of x");
      const Tensor sdy = slice(dy, 0, a, n), sx = slice(x, 0, 1, n - a + 1);
      expect_same(relu_backward(slice(on_gpu(dy), 0, a, n), slice(on_gpu(x), 0, 1, n - a + 1)).to_vector<float>(),
                  relu_backward(sdy, sx).to_vector<float>());
    }
  }
  for (DType dt : {DType::f64, DType::i32, DType::i64}) {
    SCOPED_TRACE(dtype_name(dt));
    dispatch_dtype(dt, [&](auto tag) {
      using T = decltype(tag);
      const Tensor x = from_vector(random_values<T>(777, 12, -5, 5), {7, 111});
      const Tensor dy = from_vector(random_values<T>(777, 13, -5, 5), {7, 111});
      EXPECT_EQ(relu_backward(on_gpu(dy), on_gpu(x)).template to_vector<T>(),
                relu_backward(dy, x).template to_vector<T>());
    });
  }
}

TEST_P(CudaNnTest, SoftmaxCrossEntropyMatchesCpu) {
  TIDE_REQUIRE_GPU();
  start_engine();
  for_each_floating([&](auto tag) {
    using T = decltype(tag);
    // Rows past the kernel's capped grid of 65536 blocks, classes past its
    // 256 threads, and a single class.
    for (const auto& [n, c] : {std::array<std::int64_t, 2>{1, 1}, {9, 7}, {5, 1000}, {70000, 3}}) {
      SCOPED_TRACE(std::string(dtype_name(dtype_v<T>)) + " " + std::to_string(n) + "x" + std::to_string(c));
      const Tensor logits = from_vector(random_values<T>(idx(n * c), 20, -8, 8), {n, c});
      const Tensor labels = from_vector(random_values<std::int32_t>(idx(n), 21, 0, static_cast<double>(c - 1)));
      const SoftmaxCrossEntropy want = softmax_cross_entropy(logits, labels);
      const SoftmaxCrossEntropy got = softmax_cross_entropy(on_gpu(logits), on_gpu(labels));
      EXPECT_EQ(got.loss.shape(), Shape{});
      EXPECT_EQ(got.probs.device(), cuda(0));
      // Both compute in double and round once to T. The sums of c
      // exponentials and of n row losses run in another order on the GPU:
      // each is a sum of positive terms, within (terms) u of exact in any
      // order, and CUDA's exp and log are within 1 ulp. So f64 agrees to
      // 2 (c + n) epsilon relative; an f32 result is the rounding of nearly
      // the same double, so at most 1 ulp (2^-23 relative) apart.
      const double rel = std::is_same_v<T, float>
                             ? std::ldexp(1.0, -23)
                             : 2.0 * static_cast<double>(c + n) * std::numeric_limits<double>::epsilon();
      const double want_loss = want.loss.item<double>();
      EXPECT_NEAR(got.loss.item<double>(), want_loss, rel * std::abs(want_loss));
      const std::vector<T> want_p = want.probs.to_vector<T>();
      std::vector<double> scale(want_p.begin(), want_p.end());
      expect_near_scaled(got.probs.to_vector<T>(), want_p, scale, rel);

      // The backward from the same probabilities is computed as on the CPU.
      const Tensor probs = want.probs;
      EXPECT_EQ(softmax_cross_entropy_backward(on_gpu(probs), on_gpu(labels)).to_vector<T>(),
                softmax_cross_entropy_backward(probs, labels).to_vector<T>());
    }
  });
}

#if TIDE_HAVE_CUDA  // reads the CUDA kernels' one-launch count
// Launched by a stream's worker, the cross-entropy's mean loss comes from
// the same launch as the rows' (the last block to finish adds the row
// losses); launched anywhere else, from a second kernel. Both give the same
// bits: the naive engine (every op launched on the frontend thread) against
// the async engine with the frontend's launches off (every op launched by
// its stream's worker), with one block and with many, some of them striding
// over rows past the grid's 65536 blocks.
TEST(CudaNnLaunches, CrossEntropyInOneLaunchGivesTheLossOfTwo) {
  TIDE_REQUIRE_GPU();
  using Shapes = std::array<std::int64_t, 2>;
  const std::vector<Shapes> shapes = {Shapes{1, 10}, Shapes{64, 10}, Shapes{300, 1000}, Shapes{70000, 3}};
  std::uint64_t launches = 0;
  auto run = [&](EngineKind kind) {
    EngineOptions o;
    o.kind = kind;
    o.cuda_devices = 1;
    const std::unique_ptr<Engine> eng = Engine::create(o);
    std::vector<double> out;
    {
      EngineScope scope(*eng);
      SyncPolicy p = eng->policy();
      p.inline_op_bytes = 0;
      eng->set_policy(p);
      launches = 0;
      for_each_floating([&](auto tag) {
        using T = decltype(tag);
        for (const auto& [n, c] : shapes) {
          const Tensor logits = on_gpu(from_vector(random_values<T>(idx(n * c), 22, -8, 8), {n, c}));
          const Tensor labels =
              on_gpu(from_vector(random_values<std::int32_t>(idx(n), 23, 0, static_cast<double>(c - 1))));
          out.push_back(softmax_cross_entropy(logits, labels).loss.item<double>());  // exact: T's value
          ++launches;
        }
      });
      eng->wait_all();
    }
    return out;
  };
  const std::uint64_t before = cuda_kernels::losses_in_one_launch();
  const std::vector<double> two = run(EngineKind::naive);
  const std::uint64_t middle = cuda_kernels::losses_in_one_launch();
  EXPECT_EQ(middle, before) << "the naive engine launched a loss as a stream's worker";
  const std::vector<double> one = run(EngineKind::async);
  // Unless the environment turned it off (TIDE_CUDA_ONE_LAUNCH=0).
  EXPECT_EQ(cuda_kernels::losses_in_one_launch() - middle, cuda_kernels::one_launch_reductions() ? launches : 0)
      << "every loss of the async engine's workers comes from one launch";
  ASSERT_EQ(two.size(), one.size());
  for (std::size_t i = 0; i < two.size(); ++i)
    EXPECT_EQ(std::memcmp(&two[i], &one[i], sizeof(double)), 0) << "loss " << i << ": " << two[i] << " vs " << one[i];
}
#endif

TEST_P(CudaNnTest, SoftmaxCrossEntropyIsStableForLargeLogits) {
  TIDE_REQUIRE_GPU();
  start_engine();
  // As on the CPU: row 0 has loss 2000, row 1 loss 0, row 2 log 2.
  const std::vector<double> lv{1000, -1000, 0, -1000, 1000, 0, 1000, 1000, -1000};
  const std::vector<std::int32_t> yv{1, 1, 0};
  const double want = (2000.0 + 0.0 + std::log(2.0)) / 3.0;
  for_each_floating([&](auto tag) {
    using T = decltype(tag);
    SCOPED_TRACE(dtype_name(dtype_v<T>));
    const std::vector<T> l(lv.begin(), lv.end());
    const SoftmaxCrossEntropy ce = softmax_cross_entropy(on_gpu(from_vector(l, {3, 3})), on_gpu(from_vector(yv)));
    EXPECT_NEAR(ce.loss.item<double>(), want, (std::is_same_v<T, float> ? 1e-7 : 1e-15) * want);
    EXPECT_EQ(ce.probs.to_vector<double>(), (std::vector<double>{1, 0, 0, 0, 1, 0, 0.5, 0.5, 0}));
  });
}

TEST_P(CudaNnTest, LabelOutOfRangeGivesNaNInsteadOfAnError) {
  TIDE_REQUIRE_GPU();
  start_engine();
  // The GPU cannot fail the op without synchronizing the host: the loss is
  // NaN, the bad rows of the gradient are NaN, the other rows are as usual,
  // and no barrier throws.
  const std::int64_t n = 4, c = 3;
  const Tensor logits = from_vector(random_values<double>(idx(n * c), 30), {n, c});
  for (std::int32_t bad : {-1, 3, std::numeric_limits<std::int32_t>::max()}) {
    SCOPED_TRACE("label " + std::to_string(bad));
    const std::vector<std::int32_t> yv{0, bad, 2, 1};
    const Tensor labels = on_gpu(from_vector(yv));
    SoftmaxCrossEntropy ce;
    Tensor d;
    EXPECT_NO_THROW({
      ce = softmax_cross_entropy(on_gpu(logits), labels);
      d = softmax_cross_entropy_backward(ce.probs, labels);
      eng_->wait_all();
    });
    EXPECT_TRUE(std::isnan(ce.loss.item<double>()));
    const std::vector<double> p = ce.probs.to_vector<double>(), dv = d.to_vector<double>();
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t j = 0; j < c; ++j) {
        const std::size_t i = idx(r * c + j);
        if (r == 1) {
          EXPECT_TRUE(std::isnan(dv[i])) << i;
        } else {
          EXPECT_EQ(dv[i], (p[i] - (j == yv[idx(r)] ? 1.0 : 0.0)) / static_cast<double>(n)) << i;
        }
      }
  }
}

TEST_P(CudaNnTest, NaNLogitsGiveTheCpusNaNs) {
  TIDE_REQUIRE_GPU();
  start_engine();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // A NaN first, a NaN later, a +inf, and a clean row.
  const std::vector<double> lv{nan, 1, 2, 0, nan, 1, 0, inf, 1, 0.5, -0.5, 2};
  const Tensor logits = from_vector(lv, {4, 3}), labels = from_vector(std::vector<std::int32_t>{0, 1, 2, 2});
  const SoftmaxCrossEntropy want = softmax_cross_entropy(logits, labels);
  const SoftmaxCrossEntropy got = softmax_cross_entropy(on_gpu(logits), on_gpu(labels));
  EXPECT_TRUE(std::isnan(want.loss.item<double>()));
  EXPECT_TRUE(std::isnan(got.loss.item<double>()));
  const std::vector<double> want_p = want.probs.to_vector<double>(), got_p = got.probs.to_vector<double>();
  expect_same(std::vector<double>(got_p.begin(), got_p.begin() + 9),
              std::vector<double>(want_p.begin(), want_p.begin() + 9));
  for (std::size_t i = 9; i < 12; ++i) EXPECT_NEAR(got_p[i], want_p[i], 1e-14 * want_p[i]) << i;
}

TEST_P(CudaNnTest, ArgmaxMatchesCpuOnEveryAxis) {
  TIDE_REQUIRE_GPU();
  start_engine();
  const Shape shape{13, 70, 9};
  // Distinct values (a permutation), then many ties (small integers): the
  // GPU scans each line in order like the CPU, so both give the first max.
  std::vector<std::int32_t> distinct(idx(shape.numel()));
  std::iota(distinct.begin(), distinct.end(), -4000);
  std::shuffle(distinct.begin(), distinct.end(), std::mt19937(40));
  const std::vector<std::int32_t> ties = random_values<std::int32_t>(idx(shape.numel()), 41, 0, 3);
  const std::vector<std::int32_t>* const value_sets[] = {&distinct, &ties};
  for (const auto* values : value_sets)
    for (DType dt : {DType::f32, DType::f64, DType::i32}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + (values == &ties ? " ties" : " distinct"));
      dispatch_dtype(dt, [&](auto tag) {
        using T = decltype(tag);
        const Tensor a = from_vector(std::vector<T>(values->begin(), values->end()), shape);
        const Tensor ga = on_gpu(a);
        for (int axis = -3; axis < 3; ++axis) {
          SCOPED_TRACE("axis " + std::to_string(axis));
          const Tensor got = argmax(ga, axis);
          EXPECT_EQ(got.dtype(), DType::i64);
          EXPECT_EQ(got.to_vector<std::int64_t>(), argmax(a, axis).to_vector<std::int64_t>());
          EXPECT_EQ(argmax(ga, axis, DType::i32).to_vector<std::int32_t>(),
                    argmax(a, axis, DType::i32).to_vector<std::int32_t>());
        }
      });
    }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor with_nan = from_vector(std::vector<float>{1, nan, 5, nan, 7, 2}, {2, 3});
  for (int axis : {0, 1})
    EXPECT_EQ(argmax(on_gpu(with_nan), axis).to_vector<std::int64_t>(),
              argmax(with_nan, axis).to_vector<std::int64_t>());
}

TEST_P(CudaNnTest, ArgmaxOfLongRowsMatchesCpu) {
  TIDE_REQUIRE_GPU();
  start_engine();
  // Rows long enough for a block per row, at lengths around the block's
  // 256 threads: distinct values, ties of small integers (the first max
  // wins), NaNs early, late and twice in a row (the first NaN wins), -inf
  // everywhere but one element, a row of equal values and a row of -inf
  // (its first index). Rows of an odd length start off 16-byte boundaries
  // (the kernel reads the aligned middle in packs); from 4,096 f32 a thread
  // takes four packs at a time.
  for (std::int64_t len : {64, 255, 256, 257, 3001, 4099, 10007}) {
    SCOPED_TRACE("len " + std::to_string(len));
    const std::int64_t rows = 8;
    std::vector<float> v(idx(rows * len));
    std::mt19937 gen(static_cast<unsigned>(len));
    for (std::int64_t k = 0; k < len; ++k) {
      v[idx(k)] = static_cast<float>(k) - 0.5f * static_cast<float>(len);  // distinct, max at the end
      v[idx(len + k)] = static_cast<float>(gen() % 4);                     // ties
      v[idx(2 * len + k)] = static_cast<float>(gen() % 100);
      v[idx(3 * len + k)] = static_cast<float>(gen() % 100);
      v[idx(4 * len + k)] = -std::numeric_limits<float>::infinity();
      v[idx(5 * len + k)] = 2.0f;
      v[idx(6 * len + k)] = static_cast<float>(len - k);                   // max first
      v[idx(7 * len + k)] = -std::numeric_limits<float>::infinity();
    }
    const float nan = std::numeric_limits<float>::quiet_NaN();
    v[idx(2 * len + len / 3)] = nan;
    v[idx(2 * len + len - 1)] = nan;
    v[idx(3 * len + len - 1)] = nan;
    v[idx(4 * len + len / 2)] = -1.0f;
    const Tensor a = from_vector(v, {rows, len});
    EXPECT_EQ(argmax(on_gpu(a), 1).to_vector<std::int64_t>(), argmax(a, 1).to_vector<std::int64_t>());
    const Tensor a64 = to_dtype(a, DType::f64);  // f64 packs hold two: NaN and -inf as well
    EXPECT_EQ(argmax(on_gpu(a64), 1).to_vector<std::int64_t>(), argmax(a64, 1).to_vector<std::int64_t>());
    // The other dtypes without NaN and infinity: -1e9 in place of -inf, 0 of NaN.
    std::vector<double> w(v.begin(), v.end());
    for (double& x : w) x = std::isnan(x) ? 0.0 : std::isinf(x) ? -1e9 : x;
    for (DType dt : {DType::f64, DType::i32, DType::i64}) {
      SCOPED_TRACE(dtype_name(dt));
      const Tensor b = to_dtype(from_vector(w, {rows, len}), dt);
      EXPECT_EQ(argmax(on_gpu(b), 1, DType::i32).to_vector<std::int32_t>(),
                argmax(b, 1, DType::i32).to_vector<std::int32_t>());
    }
  }
}

/// Forward and backward of y = linear(relu(linear(x, w1, b1)), w2, b2) with
/// softmax cross-entropy, as a trainer pushes them, on the tensors' device.
struct MlpGrads {
  Tensor loss, dw1, db1, dw2, db2;
};
MlpGrads mlp_step(const Tensor& x, const Tensor& labels, const Tensor& w1, const Tensor& b1,
                  const Tensor& w2, const Tensor& b2) {
  Tensor z1 = linear(x, w1, b1), h = relu(z1), logits = linear(h, w2, b2);
  SoftmaxCrossEntropy ce = softmax_cross_entropy(logits, labels);
  Tensor dlogits = softmax_cross_entropy_backward(ce.probs, labels);
  Tensor dz1 = relu_backward(linear_backward_input(dlogits, w2), z1);
  return {ce.loss, linear_backward_weight(dz1, x), linear_backward_bias(dz1),
          linear_backward_weight(dlogits, h), linear_backward_bias(dlogits)};
}

TEST_P(CudaNnTest, TwoLayerMlpGradientsMatchCpuInF64) {
  TIDE_REQUIRE_GPU();
  start_engine();
  const std::int64_t n = 33, in = 20, hidden = 17, classes = 5;
  const Tensor x = from_vector(random_values<double>(idx(n * in), 50), {n, in});
  const Tensor labels = from_vector(random_values<std::int32_t>(idx(n), 51, 0, classes - 1));
  const Tensor w1 = from_vector(random_values<double>(idx(hidden * in), 52), {hidden, in});
  const Tensor b1 = from_vector(random_values<double>(idx(hidden), 53), {hidden});
  const Tensor w2 = from_vector(random_values<double>(idx(classes * hidden), 54), {classes, hidden});
  const Tensor b2 = from_vector(random_values<double>(idx(classes), 55), {classes});
  const MlpGrads want = mlp_step(x, labels, w1, b1, w2, b2);
  const MlpGrads got = mlp_step(on_gpu(x), on_gpu(labels), on_gpu(w1), on_gpu(b1), on_gpu(w2), on_gpu(b2));
  // Every value is O(1) and passes through a few gemms of at most 33 terms,
  // exp and log: the two devices differ by rounding only, ~1e-15. 1e-12
  // (relative, plus absolute for values near 0) is far below any real bug.
  auto close = [](const Tensor& g, const Tensor& w, const char* what) {
    const std::vector<double> gv = g.to_vector<double>(), wv = w.to_vector<double>();
    ASSERT_EQ(gv.size(), wv.size()) << what;
    for (std::size_t i = 0; i < gv.size(); ++i)
      EXPECT_NEAR(gv[i], wv[i], 1e-12 * std::abs(wv[i]) + 1e-12) << what << " element " << i;
  };
  close(got.loss, want.loss, "loss");
  close(got.dw1, want.dw1, "dw1");
  close(got.db1, want.db1, "db1");
  close(got.dw2, want.dw2, "dw2");
  close(got.db2, want.db2, "db2");
}

/// A few optimizer steps on both devices from the same start and gradients.
/// The GPU kernels round every double operation on its own, like the CPU,
/// and both round to T once per stored value: the results are equal.
TEST_P(CudaNnTest, OptimizerStepsMatchCpuExactly) {
  TIDE_REQUIRE_GPU();
  start_engine();
  for_each_floating([&](auto tag) {
    using T = decltype(tag);
    for (std::int64_t size : {std::int64_t{1}, std::int64_t{1000}, (std::int64_t{1} << 20) + 7}) {
      SCOPED_TRACE(std::string(dtype_name(dtype_v<T>)) + " size " + std::to_string(size));
      const std::vector<T> start = random_values<T>(idx(size), 60);
      const std::vector<T> zero(idx(size), T(0));
      Tensor p = from_vector(start), vel = from_vector(zero);
      Tensor gp = on_gpu(p), gvel = on_gpu(vel);
      Tensor ap = from_vector(start), m = from_vector(zero), v = from_vector(zero);
      Tensor gap = on_gpu(ap), gm = on_gpu(m), gv = on_gpu(v);
      const SgdOptions sgd{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3};
      AdamOptions adam;
      adam.lr = 1e-2;
      adam.weight_decay = 1e-2;
      for (std::int64_t step = 1; step <= 4; ++step) {
        const Tensor g = from_vector(random_values<T>(idx(size), static_cast<std::uint32_t>(60 + step)));
        const Tensor gg = on_gpu(g);
        sgd_step_(p, g, vel, sgd);
        sgd_step_(gp, gg, gvel, sgd);
        adam_step_(ap, g, m, v, step, adam);
        adam_step_(gap, gg, gm, gv, step, adam);
      }
      EXPECT_EQ(gp.to_vector<T>(), p.to_vector<T>());
      EXPECT_EQ(gvel.to_vector<T>(), vel.to_vector<T>());
      EXPECT_EQ(gap.to_vector<T>(), ap.to_vector<T>());
      EXPECT_EQ(gm.to_vector<T>(), m.to_vector<T>());
      EXPECT_EQ(gv.to_vector<T>(), v.to_vector<T>());
    }
  });
  // grad may alias param (each element is read before it is written).
  Tensor p = from_vector(std::vector<double>{1.0, -2.0, 3.0}), vel = from_vector(std::vector<double>(3, 0.0));
  Tensor gp = on_gpu(p), gvel = on_gpu(vel);
  sgd_step_(p, p, vel, {.lr = 0.5});
  sgd_step_(gp, gp, gvel, {.lr = 0.5});
  EXPECT_EQ(gp.to_vector<double>(), p.to_vector<double>());
}

TEST_P(CudaNnTest, FrontendChecksAreShared) {
  TIDE_REQUIRE_GPU();
  start_engine();
  const Tensor x = on_gpu(from_vector(std::vector<float>(6, 1.0f), {2, 3}));
  const Tensor w = on_gpu(from_vector(std::vector<float>(12, 1.0f), {4, 3}));
  const Tensor b_cpu = from_vector(std::vector<float>(4, 0.0f));
  const Tensor b = on_gpu(b_cpu);
  const Tensor labels_f32 = on_gpu(from_vector(std::vector<float>{0, 1}));
  Tensor p = on_gpu(from_vector(std::vector<float>(6, 1.0f), {2, 3}));
  Tensor v = on_gpu(from_vector(std::vector<float>(6, 0.0f), {2, 3}));
  eng_->wait_all();
  const std::uint64_t before = eng_->stats().ops_pushed;
  EXPECT_THROW(linear(x, w, b_cpu), DeviceError);
  EXPECT_THROW(linear(x, x, b), ShapeError);
  EXPECT_THROW(softmax_cross_entropy(x, labels_f32), DTypeError);
  EXPECT_THROW(sgd_step_(p, x, v, {.lr = -1.0}), ValueError);
  EXPECT_THROW(argmax(x, 2), ShapeError);
  EXPECT_EQ(eng_->stats().ops_pushed, before);
}

}  // namespace
}  // namespace tide::testing
