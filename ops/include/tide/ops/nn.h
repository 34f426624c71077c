// The pieces of a small multilayer-perceptron trainer: a fully connected
// layer with its backward split in three, the ReLU backward, softmax
// cross-entropy, argmax and eq for accuracy, and in-place SGD and Adam.
//
// Like every op, each function checks its arguments on the frontend (a
// ShapeError, DTypeError, DeviceError, UndefinedTensorError or ValueError
// naming the op, thrown before anything is allocated or enqueued), pushes one
// op and returns at once; call it from the engine's frontend thread. Tensor
// arguments must be on one device. The layer, loss and optimizer ops take
// f32 or f64 (all arguments of one dtype, apart from the i32 labels); sums,
// the softmax and the optimizer arithmetic run in double, in a fixed order,
// and round to the dtype once, so results are reproducible run to run.
//
// On a CUDA device every op runs the same checks and has the same
// semantics, with these differences: the gemms go through cuBLAS (f32
// products follow set_matmul_precision, <tide/ops/linalg.h>), the softmax
// reduces in another (fixed) order with CUDA's exp and log, and a label out
// of range gives NaN instead of an error (see softmax_cross_entropy). The
// bias gradient, relu_backward, argmax and the optimizer steps give the
// CPU's results bit for bit.
//
// One training step of y = linear(relu(linear(x, w1, b1)), w2, b2):
//
//   Tensor z1 = linear(x, w1, b1), h = relu(z1), logits = linear(h, w2, b2);
//   auto [loss, probs] = softmax_cross_entropy(logits, labels);
//   Tensor dlogits = softmax_cross_entropy_backward(probs, labels);
//   Tensor dw2 = linear_backward_weight(dlogits, h), db2 = linear_backward_bias(dlogits);
//   Tensor dz1 = relu_backward(linear_backward_input(dlogits, w2), z1);
//   ...
//   sgd_step_(w2, dw2, w2_velocity, {.lr = 0.1});
#pragma once

#include <cstdint>

#include <tide/ops/creation.h>

namespace tide {

// ---------------------------------------------------------------------------
// Fully connected layer (PyTorch's nn.Linear layout: w is [out, in]).

/// x [N, in], w [out, in], b [out] -> y [N, out] = x w^T + b, in one op
/// (a gemm, then the bias added in the same kernel; on a CUDA device the
/// op launches cuBLAS's gemm and then a bias kernel).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, Loc loc = Loc::current());

/// The three halves of linear's backward, given dy [N, out], the gradient
/// of the objective with respect to y. Separate ops so that a trainer can
/// push the parameter gradients first (and start reducing them across ranks)
/// before it computes dx.
/// dw [out, in] = dy^T x.
Tensor linear_backward_weight(const Tensor& dy, const Tensor& x, Loc loc = Loc::current());
/// db [out] = the sum of dy's rows, in row order.
Tensor linear_backward_bias(const Tensor& dy, Loc loc = Loc::current());
/// dx [N, in] = dy w.
Tensor linear_backward_input(const Tensor& dy, const Tensor& w, Loc loc = Loc::current());

// ---------------------------------------------------------------------------
// Activations and loss.

/// The gradient through relu(x): dy where x > 0, else 0 (so 0 at x = 0 and
/// where x is NaN). dy and x: same shape, dtype (any) and device.
Tensor relu_backward(const Tensor& dy, const Tensor& x, Loc loc = Loc::current());

struct SoftmaxCrossEntropy {
  Tensor loss;   // 0-d (shape {}): the mean over rows of -log softmax(logits)[label]
  Tensor probs;  // [N, C]: softmax(logits), kept for the backward
};

/// logits [N, C] (f32 or f64, N >= 1, C >= 1), labels i32 [N] with values in
/// [0, C). Stable: each row has its maximum subtracted before exp, and the
/// log-sum-exp is taken in double, so logits like +-1000 give finite, exact
/// losses. Both outputs are written by one op. A label outside [0, C) is
/// only seen by the kernel: the op fails, and the next barrier on its
/// outputs throws a BackendError whose message gives the row, the label and C.
/// On a CUDA device the kernel cannot fail the op without the host waiting
/// for it, so it does not: that row's loss is NaN, which makes `loss` NaN
/// (probs are still the softmax), and no barrier throws. Check the loss (or
/// the labels) where bad labels are possible.
SoftmaxCrossEntropy softmax_cross_entropy(const Tensor& logits, const Tensor& labels,
                                          Loc loc = Loc::current());

/// The gradient of softmax_cross_entropy's loss with respect to the logits:
/// (probs - onehot(labels)) / N, [N, C]. Labels are checked as above; on a
/// CUDA device a row with a bad label is all NaN.
Tensor softmax_cross_entropy_backward(const Tensor& probs, const Tensor& labels,
                                      Loc loc = Loc::current());

// ---------------------------------------------------------------------------
// Metrics: accuracy = sum(eq(argmax(logits, 1), labels)).

/// The index (i32) of the largest element along `axis` (that axis removed; a
/// negative axis counts from the end); the first one on ties, and the first
/// NaN if there is one (as max() lets a NaN win). Any dtype; the axis must
/// have at least one element (ValueError otherwise).
Tensor argmax(const Tensor& a, int axis, Loc loc = Loc::current());

/// 1 where a == b, else 0, in a's dtype. Same shape, dtype (any) and device,
/// as for add. NaN equals nothing.
Tensor eq(const Tensor& a, const Tensor& b, Loc loc = Loc::current());

// ---------------------------------------------------------------------------
// Optimizers: one op each, updating the parameter and its state in place
// (so they order after every earlier reader and writer of those tensors).
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

}  // namespace tide
