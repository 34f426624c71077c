// tide::optim's optimizers (<tide/ops/optimizers.h>).
#include <tide/ops/optimizers.h>

#include <string>

#include <tide/core/autograd.h>
#include <tide/ops/elementwise.h>

namespace tide::optim {

Optimizer::Optimizer(std::vector<Tensor> params, const char* name) : params_(std::move(params)) {
  if (params_.empty()) throw UsageError(std::string(name) + ": got an empty parameter list");
  for (std::size_t i = 0; i < params_.size(); ++i) {
    params_[i].check_defined(name);
    if (!params_[i].requires_grad() || !params_[i].is_leaf())
      throw UsageError(std::string(name) + ": parameter " + std::to_string(i) +
                       " is not a leaf that requires a gradient (call set_requires_grad())");
  }
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.set_grad(Tensor());
}

SGD::SGD(std::vector<Tensor> params, SgdOptions o) : Optimizer(std::move(params), "SGD"), o_(o) {
  velocity_.resize(params_.size());
}

void SGD::step(Loc loc) {
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    if (!velocity_[i].defined()) velocity_[i] = zeros(p.shape(), {p.dtype(), p.device()}, loc);
    sgd_step_(p, g, velocity_[i], o_, loc);
  }
}

Adam::Adam(std::vector<Tensor> params, AdamOptions o, bool decoupled)
    : Optimizer(std::move(params), decoupled ? "AdamW" : "Adam"), o_(o), decoupled_(decoupled) {
  m_.resize(params_.size());
  v_.resize(params_.size());
  steps_.assign(params_.size(), 0);
}

void Adam::step(Loc loc) {
  NoGradGuard no_grad;
  AdamOptions o = o_;
  if (decoupled_) o.weight_decay = 0.0;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    if (!m_[i].defined()) {
      m_[i] = zeros(p.shape(), {p.dtype(), p.device()}, loc);
      v_[i] = zeros(p.shape(), {p.dtype(), p.device()}, loc);
    }
    if (decoupled_ && o_.lr * o_.weight_decay != 0.0) mul_(p, 1.0 - o_.lr * o_.weight_decay, loc);
    adam_step_(p, g, m_[i], v_[i], ++steps_[i], o, loc);
  }
}

}  // namespace tide::optim
