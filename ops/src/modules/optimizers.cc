// tide::optim's optimizers (<tide/ops/optimizers.h>).
#include <tide/ops/optimizers.h>

#include <algorithm>
#include <string>
#include <vector>

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
  // Every parameter with a gradient in one multi-tensor step (per device
  // and dtype): one launch on a GPU.
  std::vector<Tensor> params, grads, velocities;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (!velocity_[i].defined()) velocity_[i] = zeros(p.shape(), {p.dtype(), p.device()}, loc);
    params.push_back(p);
    grads.push_back(std::move(g));
    velocities.push_back(velocity_[i]);
  }
  sgd_step_(params, grads, velocities, o_, loc);
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
  // The parameters with a gradient, grouped by their step count (the same
  // for all unless some went without a gradient), each group in one
  // multi-tensor step.
  struct Group {
    std::int64_t step;
    std::vector<Tensor> params, grads, m, v;
  };
  std::vector<Group> groups;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (!m_[i].defined()) {
      m_[i] = zeros(p.shape(), {p.dtype(), p.device()}, loc);
      v_[i] = zeros(p.shape(), {p.dtype(), p.device()}, loc);
    }
    if (decoupled_ && o_.lr * o_.weight_decay != 0.0) mul_(p, 1.0 - o_.lr * o_.weight_decay, loc);
    const std::int64_t step = ++steps_[i];
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& gr) { return gr.step == step; });
    if (it == groups.end()) it = groups.insert(groups.end(), Group{step, {}, {}, {}, {}});
    it->params.push_back(p);
    it->grads.push_back(std::move(g));
    it->m.push_back(m_[i]);
    it->v.push_back(v_[i]);
  }
  for (Group& gr : groups) adam_step_(gr.params, gr.grads, gr.m, gr.v, gr.step, o, loc);
}

}  // namespace tide::optim
