// The multi-tensor optimizer steps (sgd_step_ and adam_step_ over lists):
// each parameter ends with the bits of the single-tensor step, in as few
// ops as devices and dtypes allow, and the lists are checked as a whole.
#include <cstdint>
#include <string>
#include <vector>

#include "ops_test_util.h"

namespace tide::testing {
namespace {

using OptimManyTest = OpsTest;
TIDE_OPS_TEST_SUITE(OptimManyTest);

/// Parameters of mixed shapes, dtypes and devices (one empty, one of a
/// single element), their gradients for `steps` steps, and zeroed states.
struct Model {
  std::vector<Tensor> params, states1, states2;
};

struct Spec {
  Shape shape;
  DType dtype;
  Device device;
};

const std::vector<Spec>& specs() {
  static const std::vector<Spec> s{
      {{4, 6}, DType::f32, cpu(0)}, {{7}, DType::f64, cpu(0)},  {{3, 1, 5}, DType::f32, cpu(0)},
      {{0}, DType::f32, cpu(0)},    {{1}, DType::f32, cpu(0)},  {{9}, DType::f32, cpu(1)},
      {{2, 3}, DType::f64, cpu(0)}, {{33}, DType::f32, cpu(0)},
  };
  return s;
}

Tensor values(const Spec& s, std::uint32_t seed) {
  const auto n = static_cast<std::size_t>(s.shape.numel());
  Tensor t = s.dtype == DType::f64 ? from_vector(random_values<double>(n, seed), s.shape)
                                   : from_vector(random_values<float>(n, seed), s.shape);
  return copy_to(t, s.device);
}

Model start() {
  Model m;
  std::uint32_t seed = 500;
  for (const Spec& s : specs()) {
    m.params.push_back(values(s, seed++));
    m.states1.push_back(zeros(s.shape, {s.dtype, s.device}));
    m.states2.push_back(zeros(s.shape, {s.dtype, s.device}));
  }
  return m;
}

std::vector<Tensor> grads(std::uint32_t step) {
  std::vector<Tensor> g;
  std::uint32_t seed = 900 + 50 * step;
  for (const Spec& s : specs()) g.push_back(values(s, seed++));
  return g;
}

TEST_P(OptimManyTest, SgdOverAListGivesTheBitsOfOneParameterAtATime) {
  const SgdOptions o{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3};
  Model one = start(), many = start();
  for (std::uint32_t step = 0; step < 4; ++step) {
    const std::vector<Tensor> g = grads(step);
    for (std::size_t k = 0; k < g.size(); ++k) sgd_step_(one.params[k], g[k], one.states1[k], o);
    sgd_step_(many.params, g, many.states1, o);
  }
  expect_same_bits(many.params, one.params, "params");
  expect_same_bits(many.states1, one.states1, "velocities");
}

TEST_P(OptimManyTest, AdamOverAListGivesTheBitsOfOneParameterAtATime) {
  AdamOptions o;
  o.lr = 1e-2;
  o.weight_decay = 1e-2;
  Model one = start(), many = start();
  for (std::uint32_t step = 0; step < 4; ++step) {
    const std::vector<Tensor> g = grads(step);
    for (std::size_t k = 0; k < g.size(); ++k)
      adam_step_(one.params[k], g[k], one.states1[k], one.states2[k], step + 1, o);
    adam_step_(many.params, g, many.states1, many.states2, step + 1, o);
  }
  expect_same_bits(many.params, one.params, "params");
  expect_same_bits(many.states1, one.states1, "m");
  expect_same_bits(many.states2, one.states2, "v");
}

TEST_P(OptimManyTest, AdamOverSeventeenParametersFillsAnOpsList) {
  // 16 parameters of Adam in one op list 64 storages read (param, grad, m,
  // v each), the most a list holds; the 17th goes to a second op.
  AdamOptions o;
  o.lr = 1e-2;
  std::vector<Tensor> p1, p2, g, m1, v1, m2, v2;
  for (int k = 0; k < 17; ++k) {
    const auto n = static_cast<std::size_t>(3 + k);
    const std::vector<float> start = random_values<float>(n, 300 + static_cast<std::uint32_t>(k));
    p1.push_back(from_vector(start));
    p2.push_back(from_vector(start));
    g.push_back(from_vector(random_values<float>(n, 400 + static_cast<std::uint32_t>(k))));
    for (auto* s : {&m1, &v1, &m2, &v2}) s->push_back(zeros({static_cast<std::int64_t>(n)}));
  }
  eng().wait_all();
  const std::uint64_t before = pushed();
  adam_step_(p1, g, m1, v1, 1, o);
  EXPECT_EQ(pushed() - before, 2u);
  for (std::size_t k = 0; k < p2.size(); ++k) adam_step_(p2[k], g[k], m2[k], v2[k], 1, o);
  expect_same_bits(p1, p2, "params");
  expect_same_bits(m1, m2, "m");
  expect_same_bits(v1, v2, "v");
}

TEST_P(OptimManyTest, OneOpPerDeviceAndDtypeOfAtMostSixteenParameters) {
  // 20 f32 parameters on cpu:0, 3 f64 ones among them and 2 on cpu:1: ops
  // of 16 + 4 f32, 3 f64 and 2 on cpu:1.
  std::vector<Tensor> p, g, v;
  for (int k = 0; k < 25; ++k) {
    const DType dt = k % 8 == 3 ? DType::f64 : DType::f32;
    const Device d = k == 5 || k == 17 ? cpu(1) : cpu(0);
    p.push_back(ones({k + 1}, {dt, d}));
    g.push_back(ones({k + 1}, {dt, d}));
    v.push_back(zeros({k + 1}, {dt, d}));
  }
  eng().wait_all();
  const std::uint64_t before = pushed();
  sgd_step_(p, g, v, {.lr = 0.5});
  EXPECT_EQ(pushed() - before, 4u);
  for (const Tensor& t : p)
    if (t.dtype() == DType::f64) EXPECT_EQ(t.to_vector<double>(), std::vector<double>(t.to_vector<double>().size(), 0.5));
    else EXPECT_EQ(t.to_vector<float>(), std::vector<float>(t.to_vector<float>().size(), 0.5f));
  const std::uint64_t before_empty = pushed();
  std::vector<Tensor> none;
  sgd_step_(none, none, none, {.lr = 0.5});
  EXPECT_EQ(pushed(), before_empty) << "an empty list pushes nothing";
}

TEST_P(OptimManyTest, ViewsOfOneBufferInPlacesOfTheirOwnAreParametersOfTheirOwn) {
  // Two parameters in one flat buffer, side by side; a gradient may be its
  // own parameter.
  Tensor flat = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6});
  std::vector<Tensor> p{slice(flat, 0, 0, 2), slice(flat, 0, 2, 6)};
  std::vector<Tensor> v{zeros({2}), zeros({4})};
  const std::vector<Tensor> g{p[0], ones({4})};
  sgd_step_(p, g, v, {.lr = 0.5});
  EXPECT_EQ(flat.to_vector<float>(), (std::vector<float>{0.5f, 1.0f, 2.5f, 3.5f, 4.5f, 5.5f}));
}

TEST_P(OptimManyTest, AFailedGradientPoisonsTheParametersOfItsOp) {
  // One op updates the whole list: a failed gradient leaves every parameter
  // of the op failed (the single-tensor step would fail only its own).
  const Tensor x = ones({3, 2}), labels = from_vector(std::vector<std::int32_t>{0, 5, 1});
  std::vector<Tensor> p{ones({4, 2}), ones({3})}, v{zeros({4, 2}), zeros({3})};
  const Tensor logits = linear(x, p[0], zeros({4}));
  const Tensor dlogits = softmax_cross_entropy_backward(softmax_cross_entropy(logits, labels).probs, labels);
  sgd_step_(p, std::vector<Tensor>{linear_backward_weight(dlogits, x), ones({3})}, v, {.lr = 0.1});
  for (const Tensor& t : p) EXPECT_THROW(t.wait_to_read(), BackendError);
  for (const Tensor& t : v) EXPECT_THROW(t.wait_to_read(), BackendError);
  eng().wait_all();
}

TEST_P(OptimManyTest, BadListsThrowAndEnqueueNothing) {
  std::vector<Tensor> p{ones({3}), ones({2})}, g{ones({3}), ones({2})}, v{zeros({3}), zeros({2})};
  std::vector<Tensor> m{zeros({3}), zeros({2})}, one_g{g[0]}, one_v{v[0]};
  std::vector<Tensor> wrong_shape{zeros({3}), zeros({5})};
  std::vector<Tensor> on_cpu1{zeros({3}), zeros({2}, {DType::f32, cpu(1)})};
  std::vector<Tensor> undefined{zeros({3}), Tensor()};
  std::vector<Tensor> g3{ones({3}), ones({3})}, v3{zeros({3}), zeros({3})}, p3{ones({3}), ones({3})};
  std::vector<Tensor> twice{p3[0], p3[0]}, shared_v{v3[0], v3[0]}, grad_is_other_state{v3[1], g3[1]};
  Tensor flat = ones({6});
  std::vector<Tensor> overlapping{slice(flat, 0, 0, 3), slice(flat, 0, 2, 5)};
  eng().wait_all();
  const std::uint64_t before = pushed();
  auto message = [](auto f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Lists of different lengths.
  EXPECT_THROW(sgd_step_(p, one_g, v, {}), ValueError);
  EXPECT_NE(message([&] { sgd_step_(p, g, one_v, {}); }).find("2 params but 1 velocities"), std::string::npos);
  EXPECT_THROW(adam_step_(p, g, m, one_v, 1, {}), ValueError);
  // An entry checked as the single-tensor step checks it, named by its place.
  EXPECT_NE(message([&] { sgd_step_(p, g, wrong_shape, {}); }).find("velocities[1]"), std::string::npos);
  EXPECT_THROW(sgd_step_(p, g, on_cpu1, {}), DeviceError);
  EXPECT_THROW(sgd_step_(p, g, undefined, {}), UndefinedTensorError);
  // Options, as for one parameter.
  EXPECT_THROW(sgd_step_(p, g, v, {.lr = -1.0}), ValueError);
  EXPECT_THROW(adam_step_(p, g, m, v, 0, {}), ValueError);
  // A parameter twice, a state shared by two entries, one entry's state
  // another's gradient, overlapping views.
  EXPECT_NE(message([&] { sgd_step_(twice, g3, v3, {}); }).find("entries 0 and 1 share memory"), std::string::npos);
  EXPECT_THROW(sgd_step_(p3, g3, shared_v, {}), ValueError);
  EXPECT_THROW(sgd_step_(p3, grad_is_other_state, v3, {}), ValueError);
  EXPECT_THROW(sgd_step_(overlapping, g3, v3, {}), ValueError);
  EXPECT_EQ(pushed(), before);
}

}  // namespace
}  // namespace tide::testing
