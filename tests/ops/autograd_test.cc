// Autograd on the CPU backend, on both engines: every differentiable op's
// gradient against central differences (f64), and the graph's rules
// (leaves, grad mode, accumulation, freed graphs, in-place ops, hooks).
#include <limits>
#include <string>
#include <vector>

#include <tide/ops/autograd.h>

#include "autograd_cases.h"

namespace tide::testing {
namespace {

using AutogradTest = OpsTest;
TIDE_OPS_TEST_SUITE(AutogradTest);

TEST_P(AutogradTest, EveryOpMatchesCentralDifferences) {
  for (const GradCase& c : grad_cases()) expect_gradients_match(c, check_gradients(c, cpu(0)));
}

TEST_P(AutogradTest, GradientsAreRightInF32Too) {
  Tensor x = from_vector(std::vector<float>{1, 2, 3}).set_requires_grad();
  Tensor w = from_vector(std::vector<float>{0.5f, -1, 2}).set_requires_grad();
  backward(sum(x * w + x));
  EXPECT_EQ(x.grad().dtype(), DType::f32);
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{1.5f, 0, 3}));
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST_P(AutogradTest, LeavesAndRecordedTensors) {
  Tensor a = ones({3});
  EXPECT_FALSE(a.requires_grad());
  EXPECT_TRUE(a.is_leaf());
  a.set_requires_grad();
  EXPECT_TRUE(a.requires_grad());
  Tensor b = a * 2.0;
  EXPECT_TRUE(b.requires_grad());
  EXPECT_FALSE(b.is_leaf());
  EXPECT_STREQ(grad_fn_name(b), "mul");
  EXPECT_STREQ(grad_fn_name(a), "");
  EXPECT_STREQ(grad_fn_name(reshape(b, {3, 1})), "reshape");
  EXPECT_THROW(b.set_requires_grad(false), UsageError);
  Tensor d = b.detach();
  EXPECT_TRUE(d.is_same(b));
  EXPECT_FALSE(d.requires_grad());
  EXPECT_THROW(ones({2}, {DType::i32}).set_requires_grad(), DTypeError);
  // Ops on tensors that need no gradient record nothing.
  EXPECT_FALSE((ones({3}) + ones({3})).requires_grad());
  // eq and argmax are piecewise constant: their results need no gradient.
  EXPECT_FALSE(eq(a, a).requires_grad());
  EXPECT_FALSE(argmax(reshape(a, {1, 3}), 1).requires_grad());
}

TEST_P(AutogradTest, NoGradRecordsNothing) {
  Tensor a = ones({3}).set_requires_grad();
  {
    NoGradGuard g;
    Tensor b = a * 2.0;
    EXPECT_FALSE(b.requires_grad());
    EXPECT_THROW(backward(sum(b)), UsageError);
    {
      GradModeGuard on(true);
      EXPECT_TRUE((a * 2.0).requires_grad());
    }
    EXPECT_FALSE(GradMode::enabled());
  }
  EXPECT_TRUE(GradMode::enabled());
}

TEST_P(AutogradTest, GradientsAccumulateAcrossBackwards) {
  Tensor a = from_vector(std::vector<double>{1, 2}).set_requires_grad();
  backward(sum(a * 3.0));
  backward(sum(a * a));
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{5, 7}));
  a.set_grad(Tensor());
  EXPECT_FALSE(a.grad().defined());
  backward(sum(a));
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{1, 1}));
  EXPECT_THROW(a.set_grad(ones({3}, {DType::f64})), ShapeError);
}

TEST_P(AutogradTest, LeavesNeverShareAGradientStorage) {
  // add's backward hands the same gradient to both inputs, and backward's
  // own seed is the caller's: each leaf still gets a storage of its own.
  Tensor a = zeros({2}).set_requires_grad(), b = zeros({2}).set_requires_grad();
  Tensor seed = ones({2});
  backward(a + b, seed);
  EXPECT_FALSE(a.grad().is_same(b.grad()));
  EXPECT_FALSE(a.grad().is_same(seed));
  EXPECT_FALSE(b.grad().is_same(seed));
  Tensor c = zeros({2}).set_requires_grad();
  backward(reshape(c, {1, 2}), ones({1, 2}));
  EXPECT_EQ(c.grad().to_vector<float>(), (std::vector<float>{1, 1}));
}

TEST_P(AutogradTest, AHookMayWriteItsGradientInPlace) {
  // As a reducer averaging one-gradient buckets in place does. add's
  // backward hands b the very gradient that mul's backward reads next:
  // b's .grad must be a copy for w's gradient to stay right.
  Tensor x = from_vector(std::vector<double>{1, 2});
  Tensor w = from_vector(std::vector<double>{3, 4}).set_requires_grad();
  Tensor b = from_vector(std::vector<double>{0, 0}).set_requires_grad();
  register_post_accumulate_grad_hook(b, [](const Tensor& g) {
    NoGradGuard no_grad;
    Tensor t = g;
    mul_(t, 0.5);
  });
  backward(x * w + b, from_vector(std::vector<double>{10, 20}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{5, 10}));
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{10, 40}));
  // The leaf first among add's inputs: still a copy.
  b.set_grad(Tensor());
  w.set_grad(Tensor());
  backward(b + x * w, from_vector(std::vector<double>{10, 20}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{5, 10}));
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{10, 40}));
}

TEST_P(AutogradTest, APassThroughToALeafCostsNoCopy) {
  Tensor w = ones({3}).set_requires_grad();
  Tensor y0 = sum(w), y1 = sum(w + 1.0);
  const std::uint64_t before = eng().stats().ops_pushed;
  backward(y0);
  const std::uint64_t plain = eng().stats().ops_pushed - before;
  w.set_grad(Tensor());
  backward(y1);
  EXPECT_EQ(eng().stats().ops_pushed - before - plain, plain);
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

TEST_P(AutogradTest, HooksThatClearTheGradientOrAddHooksAreSafe) {
  Tensor a = ones({2}).set_requires_grad();
  std::vector<bool> seen;
  register_post_accumulate_grad_hook(a, [&](const Tensor& g) {
    seen.push_back(g.defined());
    a.set_grad(Tensor());
    register_post_accumulate_grad_hook(a, [&](const Tensor&) { seen.push_back(true); });
  });
  register_post_accumulate_grad_hook(a, [&](const Tensor& g) { seen.push_back(g.defined()); });
  backward(sum(a));
  EXPECT_EQ(seen, (std::vector<bool>{true, true}));
  EXPECT_FALSE(a.grad().defined());
}

TEST_P(AutogradTest, MaxAndEmptyBroadcasts) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = from_vector(std::vector<double>{1, nan, 3}).set_requires_grad();
  backward(max(a));
  const std::vector<double> g = a.grad().to_vector<double>();
  EXPECT_EQ(g[0], 0);
  EXPECT_EQ(g[1], 1);
  EXPECT_EQ(g[2], 0);
  Tensor t = from_vector(std::vector<double>{2, 5, 5}).set_requires_grad();
  backward(max(t));
  EXPECT_EQ(t.grad().to_vector<double>(), (std::vector<double>{0, 0.5, 0.5}));  // ties share it
  Tensor one = ones({1}).set_requires_grad();
  backward(sum(one + zeros({5, 0})));
  EXPECT_EQ(one.grad().to_vector<float>(), (std::vector<float>{0}));
}

TEST_P(AutogradTest, AFailingBackwardChangesNoGradient) {
  Tensor a = from_vector(std::vector<double>{1, 2}).set_requires_grad();
  Tensor b = from_vector(std::vector<double>{3, 4}).set_requires_grad();
  Tensor za = sum(a * a);
  backward(za);
  const std::vector<double> ga = a.grad().to_vector<double>();
  const Tensor both = za + sum(b * 2.0);
  // za's graph is freed: the backward fails before it pushes anything.
  EXPECT_REJECTED(UsageError, backward(both));
  EXPECT_FALSE(b.grad().defined());
  EXPECT_EQ(a.grad().to_vector<double>(), ga);
  Tensor c = from_vector(std::vector<double>{5, 6});
  Tensor y = sum(b * c) + sum(b * 3.0);
  add_(c, 1.0);
  EXPECT_REJECTED(UsageError, backward(y));
  EXPECT_FALSE(b.grad().defined());
}

TEST_P(AutogradTest, ALongGraphIsFreedWithoutRecursion) {
  Tensor a = zeros({1}).set_requires_grad();
  {
    Tensor y = a;
    for (int i = 0; i < 300000; ++i) y = y + 1.0;
    y.wait_to_read();
  }  // the graph of 300,000 nodes goes here
  SUCCEED();
}

TEST_P(AutogradTest, ASecondBackwardNeedsARetainedGraph) {
  Tensor a = from_vector(std::vector<double>{1, 2}).set_requires_grad();
  Tensor y = sum(a * a);
  backward(y, Tensor(), {.retain_graph = true});
  backward(y);
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{4, 8}));
  const std::string m = message_of<UsageError>([&] { backward(y); });
  EXPECT_NE(m.find("freed"), std::string::npos) << m;
  EXPECT_NE(m.find("retain_graph"), std::string::npos) << m;
}

TEST_P(AutogradTest, ClearErrors) {
  Tensor a = ones({2, 3}).set_requires_grad();
  EXPECT_THROW(backward(ones({1})), UsageError);                 // needs no gradient
  EXPECT_THROW(backward(a * 2.0), ShapeError);                   // not one element: grad needed
  EXPECT_THROW(backward(a * 2.0, ones({3, 2})), ShapeError);     // grad of the wrong shape
  EXPECT_THROW(backward(sum(a), ones({}, {DType::f64})), ShapeError);
  // The hand-written backward ops have no derivative of their own.
  Tensor dy = linear_backward_input(a, ones({3, 4}));
  const std::string m = message_of<UsageError>([&] { backward(sum(dy)); });
  EXPECT_NE(m.find("linear_backward_input"), std::string::npos) << m;
}

TEST_P(AutogradTest, InPlaceOpsAreRefusedWhileRecording) {
  Tensor a = ones({3}).set_requires_grad();
  Tensor plain = ones({3});
  EXPECT_REJECTED(UsageError, add_(a, 1.0));
  EXPECT_REJECTED(UsageError, mul_(plain, a));
  EXPECT_REJECTED(UsageError, copy_(a, plain));
  {
    NoGradGuard g;  // an optimizer's update
    add_(a, 1.0);
  }
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{2, 2, 2}));
  add_(plain, 1.0);  // needs no gradient: fine
}

TEST_P(AutogradTest, AnInPlaceWriteToASavedTensorFailsTheBackward) {
  Tensor a = from_vector(std::vector<double>{1, 2}).set_requires_grad();
  Tensor b = from_vector(std::vector<double>{3, 4});
  Tensor y = sum(a * b);  // saves b for a's gradient
  add_(b, 1.0);
  const std::string m = message_of<UsageError>([&] { backward(y); });
  EXPECT_NE(m.find("'mul'"), std::string::npos) << m;
  EXPECT_NE(m.find("in place"), std::string::npos) << m;
}

TEST_P(AutogradTest, HooksRunOnceEachWithTheWholeGradientLastLayerFirst) {
  Tensor x = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor w1 = ones({4, 3}, {DType::f64}).set_requires_grad(), b1 = zeros({4}, {DType::f64}).set_requires_grad();
  Tensor w2 = ones({2, 4}, {DType::f64}).set_requires_grad(), b2 = zeros({2}, {DType::f64}).set_requires_grad();
  std::vector<std::string> order;
  std::vector<double> w1_sum;
  register_post_accumulate_grad_hook(w1, [&](const Tensor& g) {
    order.push_back("w1");
    w1_sum.push_back(sum(g).item<double>());
  });
  register_post_accumulate_grad_hook(b1, [&](const Tensor&) { order.push_back("b1"); });
  register_post_accumulate_grad_hook(w2, [&](const Tensor&) { order.push_back("w2"); });
  register_post_accumulate_grad_hook(b2, [&](const Tensor&) { order.push_back("b2"); });
  // w1 is used twice: its hook waits for both contributions.
  const Tensor out = linear(relu(linear(x, w1, b1)), w2, b2);
  Tensor y = out + sum(w1);  // recorded last, so its backward runs first
  backward(sum(y));
  EXPECT_EQ(order, (std::vector<std::string>{"w2", "b2", "w1", "b1"}));
  ASSERT_EQ(w1_sum.size(), 1u);
  EXPECT_DOUBLE_EQ(w1_sum[0], sum(w1.grad()).item<double>());
  EXPECT_THROW(register_post_accumulate_grad_hook(y, [](const Tensor&) {}), UsageError);
}

TEST_P(AutogradTest, AnMlpStepOnAutogradMatchesTheHandWrittenBackward) {
  const Tensor x = from_vector(random_values<float>(8 * 5, 1), {8, 5});
  const Tensor labels = class_labels(8, 3, cpu(0));
  const std::vector<float> w1v = random_values<float>(6 * 5, 2), w2v = random_values<float>(3 * 6, 3);
  Tensor w1 = from_vector(w1v, {6, 5}).set_requires_grad(), b1 = zeros({6}).set_requires_grad();
  Tensor w2 = from_vector(w2v, {3, 6}).set_requires_grad(), b2 = zeros({3}).set_requires_grad();
  const Tensor z1 = linear(x, w1, b1), h = relu(z1);
  const Tensor loss = softmax_cross_entropy(linear(h, w2, b2), labels).loss;
  const std::uint64_t before = eng().stats().ops_pushed;
  backward(loss);
  // The hand-written chain's 7 ops, no more: the loss's gradient of 1 costs
  // no ones tensor and no multiply (softmax_cross_entropy_backward, then
  // dw2, db2, dh, relu_backward, dw1, db1).
  EXPECT_EQ(eng().stats().ops_pushed - before, 7u);

  NoGradGuard g;
  const Tensor hz1 = linear(x, w1, b1), hh = relu(hz1);
  const auto sce = softmax_cross_entropy(linear(hh, w2, b2), labels);
  const Tensor dlogits = softmax_cross_entropy_backward(sce.probs, labels);
  const Tensor dz1 = relu_backward(linear_backward_input(dlogits, w2), hz1);
  // The loss's gradient is 1: the hand-written chain, bit for bit.
  EXPECT_EQ(w2.grad().to_vector<float>(), linear_backward_weight(dlogits, hh).to_vector<float>());
  EXPECT_EQ(b2.grad().to_vector<float>(), linear_backward_bias(dlogits).to_vector<float>());
  EXPECT_EQ(w1.grad().to_vector<float>(), linear_backward_weight(dz1, x).to_vector<float>());
  EXPECT_EQ(b1.grad().to_vector<float>(), linear_backward_bias(dz1).to_vector<float>());
}

}  // namespace
}  // namespace tide::testing
