// tide::nn::Module and the layers (<tide/ops/modules.h>).
#include <tide/ops/modules.h>

#include <cmath>
#include <string>

#include <tide/core/autograd.h>
#include <tide/ops/elementwise.h>
#include <tide/ops/linalg.h>
#include <tide/ops/nn.h>

namespace tide::nn {

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out = params_;
  for (const auto& [name, m] : children_)
    for (auto& [sub, p] : m->named_parameters()) out.emplace_back(name + "." + sub, p);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, p] : named_parameters()) out.push_back(p);
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [name, m] : children_) m->train(on);
}

void Module::zero_grad() {
  for (Tensor& p : parameters()) p.set_grad(Tensor());
}

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> out;
  for (auto& [name, p] : named_parameters()) out.emplace(name, p.detach());
  return out;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  const auto own = named_parameters();
  std::string missing, unexpected;
  std::map<std::string, bool> known;
  for (const auto& [name, p] : own) {
    known[name] = true;
    const auto it = state.find(name);
    if (it == state.end()) {
      missing += (missing.empty() ? "" : ", ") + name;
      continue;
    }
    const Tensor& src = it->second;
    src.check_defined("load_state_dict");
    if (src.shape() != p.shape())
      throw ShapeError("load_state_dict: " + name + " is " + p.shape().str() + " here but " + src.shape().str() +
                       " in the state dict");
    if (src.dtype() != p.dtype())
      throw DTypeError("load_state_dict: " + name + " is " + dtype_name(p.dtype()) + " here but " +
                       dtype_name(src.dtype()) + " in the state dict");
  }
  for (const auto& [name, t] : state)
    if (!known.count(name)) unexpected += (unexpected.empty() ? "" : ", ") + name;
  if (strict && (!missing.empty() || !unexpected.empty()))
    throw ValueError("load_state_dict: missing [" + missing + "], unexpected [" + unexpected + "]");
  NoGradGuard no_grad;  // writes the parameters in place
  for (const auto& [name, p] : own) {
    const auto it = state.find(name);
    if (it == state.end()) continue;
    Tensor dst = p;
    copy_(dst, it->second);
  }
}

Tensor& Module::register_parameter(const std::string& name, Tensor t) {
  t.check_defined("register_parameter");
  t.set_requires_grad();
  params_.emplace_back(name, std::move(t));
  return params_.back().second;
}

std::shared_ptr<Module> Module::register_module(const std::string& name, std::shared_ptr<Module> m) {
  if (!m) throw ValueError("register_module: module '" + name + "' is null");
  children_.emplace_back(name, m);
  return m;
}

namespace {

/// U(-bound, bound) from the engine's generator, or from a fixed seed.
Tensor uniform(const Shape& s, double bound, const LinearOptions& o, std::optional<std::uint64_t> seed) {
  NoGradGuard no_grad;
  return mul(sub(mul(rand(s, {o.dtype, o.device}, {seed}), 2.0), 1.0), bound);
}

}  // namespace

Linear::Linear(std::int64_t in, std::int64_t out, LinearOptions o) {
  if (in < 1 || out < 1)
    throw ValueError("Linear: in and out must be at least 1, got " + std::to_string(in) + " and " +
                     std::to_string(out));
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  weight_ = register_parameter("weight", uniform(Shape{out, in}, bound, o, o.seed));
  if (o.bias)
    bias_ = register_parameter("bias", uniform(Shape{out}, bound, o, o.seed ? std::optional(*o.seed + 1) : std::nullopt));
}

Tensor Linear::forward(const Tensor& x) {
  return bias_.defined() ? linear(x, weight_, bias_) : matmul(x, weight_, false, true);
}

Tensor ReLU::forward(const Tensor& x) { return relu(x); }

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) push_back(std::move(m));
}

void Sequential::push_back(std::shared_ptr<Module> m) { register_module(std::to_string(size()), std::move(m)); }

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (const auto& [name, m] : children()) h = m->forward(h);
  return h;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& labels, Loc loc) {
  return softmax_cross_entropy(logits, labels, loc).loss;
}

}  // namespace tide::nn
