// Gradient checks shared by the CPU and GPU autograd tests: each case is a
// function of f64 inputs whose gradients backward() computes and central
// differences check.
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <tide/tide.h>

#include "ops_test_util.h"

namespace tide::testing {

struct GradCase {
  std::string name;
  std::vector<Shape> shapes;
  std::function<Tensor(const std::vector<Tensor>&)> f;
  double lo = -1.0, hi = 1.0;  // where the inputs are drawn
};

/// Labels for softmax_cross_entropy cases: row i has class i % classes.
inline Tensor class_labels(std::int64_t rows, std::int32_t classes, Device d) {
  std::vector<std::int32_t> v;
  for (std::int64_t i = 0; i < rows; ++i) v.push_back(static_cast<std::int32_t>(i % classes));
  return from_vector(v, d);
}

inline std::vector<GradCase> grad_cases() {
  using V = const std::vector<Tensor>&;
  std::vector<GradCase> c;
  // Broadcasting: the gradient of the stretched operand sums over the
  // stretched axes.
  c.push_back({"add", {{3, 4}, {3, 4}}, [](V x) { return x[0] + x[1]; }});
  c.push_back({"add row", {{3, 4}, {4}}, [](V x) { return x[0] + x[1]; }});
  c.push_back({"sub column", {{3, 1}, {3, 4}}, [](V x) { return x[0] - x[1]; }});
  c.push_back({"mul outer", {{3, 1}, {1, 4}}, [](V x) { return x[0] * x[1]; }});
  c.push_back({"mul 3-d", {{2, 3, 4}, {3, 1}}, [](V x) { return x[0] * x[1]; }});
  c.push_back({"mul scalar tensor", {{3, 4}, {}}, [](V x) { return x[0] * x[1]; }});
  c.push_back({"div", {{3, 4}, {4}}, [](V x) { return x[0] / x[1]; }, 0.5, 2.0});
  c.push_back({"same input twice", {{5}}, [](V x) { return x[0] * x[0] + x[0]; }});
  c.push_back({"scalars", {{6}}, [](V x) { return (2.0 - (x[0] + 1.5) * 3.0) / 4.0 - 0.25; }});
  c.push_back({"rdiv", {{6}}, [](V x) { return 3.0 / x[0]; }, 0.5, 2.0});
  c.push_back({"neg exp", {{6}}, [](V x) { return exp(-x[0]); }});
  c.push_back({"log", {{6}}, [](V x) { return log(x[0]); }, 0.5, 3.0});
  c.push_back({"sqrt", {{6}}, [](V x) { return sqrt(x[0]); }, 0.5, 3.0});
  c.push_back({"tanh", {{6}}, [](V x) { return tanh(x[0] * 2.0); }, -1.5, 1.5});
  c.push_back({"sigmoid", {{6}}, [](V x) { return sigmoid(x[0] * 3.0); }, -1.5, 1.5});
  // abs away from 0 (its kink), on both sides.
  c.push_back({"abs", {{8}}, [](V x) { return abs(x[0] - 0.5); }, 0.0, 1.0});
  c.push_back({"pow broadcast", {{3, 4}, {4}}, [](V x) { return pow(x[0], x[1]); }, 0.5, 2.0});
  c.push_back({"pow scalar", {{6}}, [](V x) { return pow(x[0], 3.0) + pow(x[0], 2.0) + pow(x[0], -0.5); }, 0.5, 2.0});
  c.push_back({"rpow", {{6}}, [](V x) { return rpow(x[0], 2.5); }});
  // A mean squared error, the first loss most users write.
  c.push_back({"mse", {{4, 3}, {4, 3}}, [](V x) { return mean(pow(x[0] - x[1], 2.0)); }});
  // where: each value input gets the gradient where it was taken (the
  // condition, fixed here, gets none); the stretched operands sum it back.
  c.push_back({"where", {{3, 4}, {4}}, [](V x) {
                 const Tensor cond = gt(reshape(arange(0, 12, 1, {x[0].dtype(), x[0].device()}), {3, 4}), 4.5);
                 return where(cond, x[0], x[1]) * x[0];
               }});
  c.push_back({"maximum minimum", {{3, 4}, {4}}, [](V x) { return maximum(x[0], x[1]) + minimum(x[0], x[1] * 0.5); }});
  c.push_back({"clamp", {{8}}, [](V x) { return clamp(x[0], -0.45, 0.55) + clamp(x[0], {}, 0.1); }});
  c.push_back({"cat", {{2, 3}, {2, 1}, {2, 4}}, [](V x) { return cat({x[0], x[1], x[2]}, 1); }});
  c.push_back({"cat rows, one input twice", {{2, 3}, {1, 3}}, [](V x) { return cat({x[0], x[1], x[0]}, -2); }});
  c.push_back({"stack", {{2, 3}, {2, 3}}, [](V x) { return stack({x[0], x[1] * 2.0}, 1); }});
  c.push_back({"softmax", {{3, 4}}, [](V x) { return softmax(x[0] * 2.0, 1); }});
  c.push_back({"log_softmax", {{3, 4}}, [](V x) { return log_softmax(x[0] * 2.0, 0); }});
  // relu away from its kink, on both sides.
  c.push_back({"relu", {{8}}, [](V x) { return relu(x[0] - 0.5); }, 0.0, 1.0});
  c.push_back({"matmul", {{3, 4}, {4, 5}}, [](V x) { return matmul(x[0], x[1]); }});
  c.push_back({"matmul ta", {{4, 3}, {4, 5}}, [](V x) { return matmul(x[0], x[1], true, false); }});
  c.push_back({"matmul tb", {{3, 4}, {5, 4}}, [](V x) { return matmul(x[0], x[1], false, true); }});
  c.push_back({"matmul ta tb", {{4, 3}, {5, 4}}, [](V x) { return matmul(x[0], x[1], true, true); }});
  c.push_back({"linear", {{5, 4}, {3, 4}, {3}}, [](V x) { return linear(x[0], x[1], x[2]); }});
  c.push_back({"softmax cross-entropy", {{6, 4}}, [](V x) {
                 return softmax_cross_entropy(x[0] * 2.0, class_labels(6, 4, x[0].device())).loss;
               }});
  c.push_back({"sum", {{3, 4}}, [](V x) { return sum(x[0]); }});
  c.push_back({"sum axis", {{3, 4, 2}}, [](V x) { return sum(x[0], 1); }});
  c.push_back({"mean", {{3, 4}}, [](V x) { return mean(x[0]); }});
  c.push_back({"mean axis", {{3, 4}}, [](V x) { return mean(x[0], -1); }});
  c.push_back({"max", {{3, 4}}, [](V x) { return max(x[0]); }});
  c.push_back({"max axis", {{3, 4}}, [](V x) { return max(x[0], 0); }});
  c.push_back({"min", {{3, 4}}, [](V x) { return min(x[0]); }});
  c.push_back({"min axis", {{3, 4}}, [](V x) { return min(x[0], 1); }});
  c.push_back({"reshape and friends", {{2, 6}}, [](V x) {
                 return squeeze(unsqueeze(reshape(flatten(x[0]), {3, 4}), 1), 1) * x[0].shape()[0];
               }});
  c.push_back({"transpose", {{3, 4}}, [](V x) { return transpose(x[0]); }});
  c.push_back({"permute", {{2, 3, 4}}, [](V x) { return permute(x[0], {2, 0, 1}); }});
  c.push_back({"slice back", {{7, 3}}, [](V x) { return slice(x[0], 0, -1, -8, -2); }});
  c.push_back({"select", {{3, 4}}, [](V x) { return select(x[0], 1, -1); }});
  // index_select with a repeated index (its gradient adds up), index_add
  // into both of its operands.
  c.push_back({"index_select", {{4, 3}}, [](V x) {
                 const Tensor i = from_vector(std::vector<std::int64_t>{2, 0, 2, 3}, Shape{4}, x[0].device());
                 return index_select(x[0], 0, i) * index_select(x[0], 0, i);
               }});
  c.push_back({"index_add", {{4, 3}, {4, 2}}, [](V x) {
                 const Tensor i = from_vector(std::vector<std::int64_t>{2, 2}, Shape{2}, x[0].device());
                 return index_add(x[0], 1, i, x[1] * x[1]) * x[0];
               }});
  c.push_back({"zero stride", {{4}}, [](V x) { return strided(x[0], {3, 4}, {0, 1}, 0); }});
  c.push_back({"mlp", {{5, 4}, {6, 4}, {6}, {3, 6}, {3}}, [](V x) {
                 const Tensor h = relu(linear(x[0], x[1], x[2]));
                 return softmax_cross_entropy(linear(h, x[3], x[4]), class_labels(5, 3, x[0].device())).loss;
               }});
  return c;
}

/// sum(f(xs) * w) for fixed random weights w: a scalar whose gradient
/// weighs every output element differently.
inline Tensor weighted(const GradCase& c, const std::vector<Tensor>& xs) {
  const Tensor y = c.f(xs);
  const Tensor w = copy_to(from_vector(random_values<double>(static_cast<std::size_t>(y.numel()), 77, -1, 1),
                                       y.shape()),
                           y.device());
  return sum(y * w);
}

/// The gradient of every input by backward(), and by central differences.
struct GradResult {
  std::vector<std::vector<double>> analytic, numeric;
};

inline GradResult check_gradients(const GradCase& c, Device d) {
  std::vector<std::vector<double>> vals;
  for (std::size_t i = 0; i < c.shapes.size(); ++i)
    vals.push_back(random_values<double>(static_cast<std::size_t>(c.shapes[i].numel()),
                                         static_cast<std::uint32_t>(11 + i), c.lo, c.hi));
  auto inputs = [&](bool grad) {
    std::vector<Tensor> xs;
    for (std::size_t i = 0; i < vals.size(); ++i) {
      Tensor t = copy_to(from_vector(vals[i], c.shapes[i]), d);
      if (grad) t.set_requires_grad();
      xs.push_back(t);
    }
    return xs;
  };
  GradResult r;
  std::vector<Tensor> xs = inputs(true);
  backward(weighted(c, xs));
  for (const Tensor& x : xs) r.analytic.push_back(x.grad().to_vector<double>());
  NoGradGuard no_grad;
  const double h = 1e-6;
  for (std::size_t i = 0; i < vals.size(); ++i) {
    std::vector<double> g;
    for (double& v : vals[i]) {
      const double keep = v;
      v = keep + h;
      const double up = weighted(c, inputs(false)).item<double>();
      v = keep - h;
      const double down = weighted(c, inputs(false)).item<double>();
      v = keep;
      g.push_back((up - down) / (2 * h));
    }
    r.numeric.push_back(g);
  }
  return r;
}

inline void expect_gradients_match(const GradCase& c, const GradResult& r) {
  for (std::size_t i = 0; i < r.analytic.size(); ++i) {
    ASSERT_EQ(r.analytic[i].size(), r.numeric[i].size()) << c.name;
    for (std::size_t j = 0; j < r.analytic[i].size(); ++j)
      EXPECT_NEAR(r.analytic[i][j], r.numeric[i][j], 1e-6 + 1e-6 * std::abs(r.numeric[i][j]))
          << c.name << ": input " << i << ", element " << j;
  }
}

}  // namespace tide::testing
