// Optimizers, as torch.optim's, for C++: each keeps its state per parameter
// (made on the first step that parameter has a gradient) and updates the
// parameters in place, one op each (sgd_step_, adam_step_ of
// <tide/ops/optim.h>), so step() only queues work. A parameter whose
// grad() is undefined is skipped.
#pragma once

#include <cstdint>
#include <vector>

#include <tide/ops/optim.h>

namespace tide::optim {

class Optimizer {
 public:
  /// Each parameter must be a floating leaf that requires a gradient
  /// (tide::UsageError otherwise, and for an empty list).
  explicit Optimizer(std::vector<Tensor> params, const char* name);
  virtual ~Optimizer() = default;
  virtual void step(Loc loc = Loc::current()) = 0;
  /// Clears every parameter's gradient.
  void zero_grad();
  const std::vector<Tensor>& params() const { return params_; }

 protected:
  std::vector<Tensor> params_;
};

/// torch.optim.SGD (dampening 0, no Nesterov).
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SgdOptions o);
  void step(Loc loc = Loc::current()) override;

 private:
  SgdOptions o_;
  std::vector<Tensor> velocity_;
};

/// torch.optim.Adam; with `decoupled`, AdamW (param *= 1 - lr * weight_decay
/// before each update, instead of weight decay added to the gradient).
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions o, bool decoupled = false);
  void step(Loc loc = Loc::current()) override;

 private:
  AdamOptions o_;
  bool decoupled_;
  std::vector<Tensor> m_, v_;
  std::vector<std::int64_t> steps_;
};

/// torch.optim.AdamW: weight_decay 0.01 unless set.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions o = {.weight_decay = 0.01}) : Adam(std::move(params), o, true) {}
};

}  // namespace tide::optim
