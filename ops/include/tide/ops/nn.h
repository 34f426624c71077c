// The pieces of a small multilayer-perceptron trainer: a fully connected
// layer with its backward split in three, the ReLU backward, softmax
// cross-entropy and argmax (with eq, <tide/ops/elementwise.h>, for
// accuracy). The optimizers, SGD and Adam, are in <tide/ops/optim.h>, which
// this header includes.
//
// Like every op, each function checks its arguments on the frontend (a
// ShapeError, DTypeError, DeviceError, UndefinedTensorError or ValueError
// naming the op, thrown before anything is allocated or enqueued), pushes one
// op and returns at once; call it from the engine's frontend thread. Tensor
// arguments must be on one device. The layer, loss and optimizer ops take
// f32 or f64 (all arguments of one dtype, apart from the integer labels); sums,
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
#include <tide/ops/elementwise.h>
#include <tide/ops/optim.h>

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

/// logits [N, C] (f32 or f64, N >= 1, C >= 1), labels i32 or i64 [N] (i64,
/// PyTorch's default, is converted to i32 first: one more op) with values in
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

/// softmax along `axis`: exp(a - max) / sum(exp(a - max)), floating dtypes;
/// and its logarithm, (a - max) - log(sum(exp(a - max))), which stays finite
/// where softmax underflows to 0. Both are compositions of differentiable
/// ops (the max, a constant shift, is taken outside the graph), so they
/// have gradients, and a few ops each.
Tensor softmax(const Tensor& a, int axis, Loc loc = Loc::current());
Tensor log_softmax(const Tensor& a, int axis, Loc loc = Loc::current());

// ---------------------------------------------------------------------------
// Metrics: accuracy = sum(eq(argmax(logits, 1), labels)).

/// The index of the largest element along `axis` (that axis removed; a
/// negative axis counts from the end), in `index` dtype: i64 by default, as
/// torch's, or i32 (which compares with i32 labels without a conversion);
/// the first one on ties, and the first NaN if there is one (as max() lets
/// a NaN win). Any number dtype (not bool); the axis must have at least one
/// element (ValueError otherwise).
Tensor argmax(const Tensor& a, int axis, DType index = DType::i64, Loc loc = Loc::current());
/// The index of the smallest element, likewise (the first on ties, the
/// first NaN if there is one).
Tensor argmin(const Tensor& a, int axis, DType index = DType::i64, Loc loc = Loc::current());

}  // namespace tide
