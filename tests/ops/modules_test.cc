// tide::nn's modules and tide::optim's optimizers: parameters and state
// dicts, updates against the step ops' formulas, and training on autograd.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <tide/ops/autograd.h>
#include <tide/ops/modules.h>
#include <tide/ops/optimizers.h>

#include "autograd_cases.h"

namespace tide::testing {
namespace {

using ModulesTest = OpsTest;
TIDE_OPS_TEST_SUITE(ModulesTest);

std::shared_ptr<nn::Sequential> mlp(std::uint64_t seed) {
  return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(4, 8, nn::LinearOptions{.seed = seed}), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(8, 3, nn::LinearOptions{.bias = false, .seed = seed + 2})});
}

TEST_P(ModulesTest, ParametersAndStateDicts) {
  auto model = mlp(10);
  std::vector<std::string> names;
  for (auto& [n, p] : model->named_parameters()) {
    names.push_back(n);
    EXPECT_TRUE(p.requires_grad() && p.is_leaf()) << n;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "2.weight"}));
  const std::vector<float> w = model->parameters()[0].to_vector<float>();
  const float bound = 0.5f;  // 1 / sqrt(4)
  double sq = 0;
  for (float v : w) {
    EXPECT_LE(std::abs(v), bound);
    sq += v * v;
  }
  EXPECT_GT(std::sqrt(sq / w.size()), bound / 4);
  // The same seed, the same weights; another seed, others.
  EXPECT_EQ(mlp(10)->parameters()[2].to_vector<float>(), model->parameters()[2].to_vector<float>());
  EXPECT_NE(mlp(11)->parameters()[0].to_vector<float>(), w);

  auto other = mlp(20);
  other->load_state_dict(model->state_dict());
  EXPECT_EQ(other->parameters()[0].to_vector<float>(), w);
  EXPECT_FALSE(other->parameters()[0].is_same(model->parameters()[0]));
  auto partial = model->state_dict();
  partial.erase("0.bias");
  EXPECT_THROW(other->load_state_dict(partial), ValueError);
  other->load_state_dict(partial, false);
  partial["0.bias"] = zeros({9});
  EXPECT_THROW(other->load_state_dict(partial, false), ShapeError);

  EXPECT_TRUE(model->is_training());
  model->eval();
  EXPECT_FALSE((*model)[2].is_training());
  model->train();
  EXPECT_TRUE((*model)[0].is_training());
}

TEST_P(ModulesTest, OptimizersFollowTheStepOps) {
  const std::vector<double> p0{1, -2, 3}, g{0.5, 0.25, -1};
  Tensor p = from_vector(p0).set_requires_grad();
  optim::SGD sgd({p}, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01});
  std::vector<double> want = p0, v(3, 0.0);
  for (int s = 0; s < 2; ++s) {
    p.set_grad(from_vector(g));
    sgd.step();
    for (int i = 0; i < 3; ++i) {
      v[i] = 0.9 * v[i] + g[i] + 0.01 * want[i];
      want[i] -= 0.1 * v[i];
    }
  }
  const std::vector<double> got = p.to_vector<double>();
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], want[i], 1e-12);

  for (bool decoupled : {false, true}) {
    Tensor q = from_vector(p0).set_requires_grad();
    std::unique_ptr<optim::Adam> adam;
    if (decoupled) adam = std::make_unique<optim::AdamW>(std::vector<Tensor>{q}, AdamOptions{.lr = 0.01, .weight_decay = 0.1});
    else adam = std::make_unique<optim::Adam>(std::vector<Tensor>{q}, AdamOptions{.lr = 0.01});
    std::vector<double> w = p0, m(3, 0), s2(3, 0);
    for (int t = 1; t <= 3; ++t) {
      q.set_grad(from_vector(g));
      adam->step();
      for (int i = 0; i < 3; ++i) {
        if (decoupled) w[i] *= 1 - 0.01 * 0.1;
        m[i] = 0.9 * m[i] + 0.1 * g[i];
        s2[i] = 0.999 * s2[i] + 0.001 * g[i] * g[i];
        w[i] -= 0.01 * (m[i] / (1 - std::pow(0.9, t))) / (std::sqrt(s2[i]) / std::sqrt(1 - std::pow(0.999, t)) + 1e-8);
      }
    }
    const std::vector<double> gq = q.to_vector<double>();
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(gq[i], w[i], 1e-10) << (decoupled ? "AdamW" : "Adam");
    adam->zero_grad();
    EXPECT_FALSE(q.grad().defined());
  }
  EXPECT_THROW(optim::SGD({ones({2})}, {}), UsageError);
  EXPECT_THROW(optim::SGD({}, {}), UsageError);
}

TEST_P(ModulesTest, TrainingOnAutogradLowersTheLoss) {
  auto model = mlp(30);
  // A learnable task: the class is the largest of the first three features.
  const std::vector<float> xv = random_values<float>(64 * 4, 5);
  std::vector<std::int32_t> yv;
  for (int r = 0; r < 64; ++r) {
    const float* row = &xv[static_cast<std::size_t>(r) * 4];
    yv.push_back(row[0] >= row[1] && row[0] >= row[2] ? 0 : row[1] >= row[2] ? 1 : 2);
  }
  const Tensor x = from_vector(xv, {64, 4}), y = from_vector(yv);
  optim::SGD opt(model->parameters(), {.lr = 0.2, .momentum = 0.9});
  std::vector<Tensor> losses;
  for (int s = 0; s < 60; ++s) {
    opt.zero_grad();
    Tensor loss = nn::cross_entropy((*model)(x), y);
    backward(loss);
    opt.step();
    losses.push_back(loss);
  }
  EXPECT_LT(losses.back().item<double>(), 0.6 * losses.front().item<double>());
}

}  // namespace
}  // namespace tide::testing
