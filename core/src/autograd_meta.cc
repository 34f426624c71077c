// Tensor's autograd accessors and the grad mode (<tide/core/autograd.h>).
#include <tide/core/autograd.h>

#include <string>

#include <tide/core/error.h>

namespace tide {

thread_local bool GradMode::enabled_ = true;

bool Tensor::requires_grad() const { return autograd_ && autograd_->requires_grad; }

bool Tensor::is_leaf() const { return !autograd_ || !autograd_->grad_fn; }

Tensor& Tensor::set_requires_grad(bool on) {
  check_defined("set_requires_grad");
  if (!is_leaf())
    throw UsageError("set_requires_grad: only a leaf's flag can be set; this tensor was made by a recorded "
                     "op (call detach() for a leaf that shares its values)");
  if (on && !is_floating(dtype_))
    throw DTypeError(std::string("set_requires_grad: only floating tensors (f32, f64) have gradients, this "
                                 "one is ") + dtype_name(dtype_));
  if (!autograd_) {
    if (!on) return *this;
    autograd_ = std::make_shared<AutogradMeta>();
  }
  autograd_->requires_grad = on;
  return *this;
}

Tensor Tensor::grad() const { return autograd_ ? autograd_->grad : Tensor(); }

void Tensor::set_grad(const Tensor& g) {
  check_defined("set_grad");
  if (g.defined()) {
    if (g.shape() != shape_ || g.dtype() != dtype_ || g.device() != device())
      throw ShapeError("set_grad: the gradient must match the tensor (" + shape_.str() + " " +
                       dtype_name(dtype_) + " on " + device().str() + "), got " + g.shape().str() + " " +
                       dtype_name(g.dtype()) + " on " + g.device().str());
    if (!autograd_) autograd_ = std::make_shared<AutogradMeta>();
  }
  if (autograd_) autograd_->grad = g.detach();
}

Tensor Tensor::detach() const { return Tensor(storage_, shape_, dtype_); }

}  // namespace tide
