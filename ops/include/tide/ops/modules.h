// Modules, as torch.nn's, for C++: a Module owns named parameters (leaf
// tensors that require gradients, <tide/ops/autograd.h>) and named
// sub-modules; forward() is the layer's computation.
//
//   auto model = std::make_shared<nn::Sequential>();
//   model->push_back(std::make_shared<nn::Linear>(64, 512));
//   model->push_back(std::make_shared<nn::ReLU>());
//   model->push_back(std::make_shared<nn::Linear>(512, 10));
//   optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
//   opt.zero_grad();
//   backward(nn::cross_entropy((*model)(x), labels));
//   opt.step();
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tide/ops/creation.h>

namespace tide::nn {

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }

  /// This module's parameters, then each sub-module's ("0.weight", ...),
  /// in the order they were registered. The tensors are handles: updating
  /// one in place updates the module.
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  /// Training mode (or evaluation) for this module and its sub-modules.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  /// Clears every parameter's gradient.
  void zero_grad();
  /// Name to parameter, detached (a copy of the handles, not of the values).
  std::map<std::string, Tensor> state_dict() const;
  /// Copies values into the parameters of the same names (shape and dtype
  /// must match; a tide::ShapeError or DTypeError names the first that does
  /// not). With strict, a missing or unexpected name is a tide::ValueError.
  /// Every check runs before anything is copied.
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);

 protected:
  /// Marks `t` as a leaf that requires a gradient and registers it.
  Tensor& register_parameter(const std::string& name, Tensor t);
  std::shared_ptr<Module> register_module(const std::string& name, std::shared_ptr<Module> m);
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }

 private:
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

struct LinearOptions {
  bool bias = true;
  DType dtype = DType::f32;
  Device device = cpu(0);
  /// Without a seed the weights come from the engine's generator; with
  /// one, w from Philox stream `seed` and b from seed + 1 (the same on every rank).
  std::optional<std::uint64_t> seed;
};

/// y = x w^T + b, x [N, in]: torch.nn.Linear, started as torch's (w and b
/// uniform in +-1/sqrt(in)).
class Linear : public Module {
 public:
  Linear(std::int64_t in, std::int64_t out, LinearOptions o = {});
  Tensor forward(const Tensor& x) override;
  /// Handles on the parameters (they share the values and the gradient).
  const Tensor& weight() const { return weight_; }
  /// Undefined without a bias.
  const Tensor& bias() const { return bias_; }

 private:
  Tensor weight_, bias_;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
};

/// Sub-modules applied in order, named "0", "1", ...
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> m);
  Tensor forward(const Tensor& x) override;
  std::size_t size() const { return children().size(); }
  Module& operator[](std::size_t i) const { return *children().at(i).second; }
};

/// The mean over rows of -log softmax(logits)[label] (softmax_cross_entropy's loss).
Tensor cross_entropy(const Tensor& logits, const Tensor& labels, Loc loc = Loc::current());

}  // namespace tide::nn
