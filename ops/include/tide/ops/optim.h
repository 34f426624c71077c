// Optimizers: SGD and Adam, one op per step, each updating a parameter and
// its state in place (so they order after every earlier reader and writer of
// those tensors).
//
// Like every op, each step checks its arguments on the frontend (the errors
// name the op and are thrown before anything is enqueued), pushes one op and
// returns at once; call it from the engine's frontend thread. The tensors
// are f32 or f64; the arithmetic runs in double and each stored value is
// rounded to the dtype once. On a CUDA device every double operation is
// rounded on its own (no fused multiply-add), so results are the CPU's bit
// for bit.
#pragma once

#include <cstdint>
#include <span>

#include <tide/ops/creation.h>

namespace tide {

// The state tensors must have the parameter's shape, dtype and device, must
// be distinct from the parameter and each other, and must start at zeros.
// Option values are checked on the frontend (ValueError).

/// torch.optim.SGD (dampening 0, no Nesterov). Options must be finite and
/// non-negative.
struct SgdOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
};

/// Per element: g' = grad + weight_decay * param; velocity = momentum *
/// velocity + g'; param -= lr * velocity. With momentum 0, velocity is just
/// g' (still written, so it may be inspected).
void sgd_step_(Tensor& param, const Tensor& grad, Tensor& velocity, const SgdOptions& options,
               Loc loc = Loc::current());

/// torch.optim.Adam (not AMSGrad). lr >= 0, beta1 and beta2 in [0, 1),
/// eps > 0, weight_decay >= 0 (L2 added to the gradient, not AdamW's
/// decoupled decay).
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

/// Step `step` (counting from 1) of Adam, per element: g' = grad +
/// weight_decay * param; m = beta1 m + (1 - beta1) g'; v = beta2 v +
/// (1 - beta2) g'^2; param -= lr * mhat / (sqrt(vhat) + eps), where mhat =
/// m / (1 - beta1^step) and sqrt(vhat) = sqrt(v) / sqrt(1 - beta2^step).
void adam_step_(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, std::int64_t step,
                const AdamOptions& options, Loc loc = Loc::current());

// The multi-tensor forms (torch.optim's foreach): the same step for
// several parameters, entry k of every list going together as the
// single-tensor form takes them, and each parameter ending with the values
// that form gives it, bit for bit. They push as few ops as the parameters
// allow: one per device and dtype, of at most 16 parameters each, so a GPU
// updates them all in one launch where the single-tensor form launches once
// per parameter. Beyond the single-tensor checks, no tensor an entry writes
// (its parameter or state) may overlap a tensor of another entry (their
// order within one op is unspecified). A mirror from as_strided counts as
// the elements of its source it follows. The engine writes a mirror back
// whole: writing part of a mirror rewrites every element the mirror
// follows, writing a mirror of a mirror every element the mirror above it
// follows, and a list that writes part of a mirror may not also write two
// tensors of one tree of mirrors (the engine refuses such an op).
// Empty lists push nothing; lists of different lengths are a ValueError.

void sgd_step_(std::span<Tensor> params, std::span<const Tensor> grads, std::span<Tensor> velocities,
               const SgdOptions& options, Loc loc = Loc::current());

void adam_step_(std::span<Tensor> params, std::span<const Tensor> grads, std::span<Tensor> m, std::span<Tensor> v,
                std::int64_t step, const AdamOptions& options, Loc loc = Loc::current());

}  // namespace tide
