// Automatic differentiation, as PyTorch's autograd does it. A floating
// tensor marked with set_requires_grad() is a leaf; every differentiable op
// that reads a tensor requiring a gradient, while grad mode is on
// (<tide/core/autograd.h>: NoGradGuard turns it off), records a node with
// what its backward needs. backward(loss) walks that graph from `loss` and
// pushes the backward ops through the same engine, on the same streams, so
// it returns as soon as they are queued: gradients are tensors like any
// other, read through barriers and blockers.
//
// Differentiable: add, sub, mul, div (tensors, broadcasting, and scalars),
// neg, exp, log, relu, where (in a and b), matmul, linear,
// softmax_cross_entropy (its loss),
// sum, mean, max (all elements or one axis; a max's gradient is shared
// evenly among the elements that tie for it), the views (reshape, flatten,
// squeeze, unsqueeze), the copies that reorder or pick (transpose, permute,
// slice, select, strided) and copy_to. eq and argmax give tensors that need
// no gradient. The hand-written backward ops (linear_backward_*,
// relu_backward, softmax_cross_entropy_backward) have no derivative: a
// backward through them throws a tide::UsageError naming them. In-place ops
// are not recorded: the elementwise ones and copy_ throw on a tensor that
// requires a gradient unless grad mode is off; the optimizer steps and the
// in-place collectives are updates and write without that check. Either
// way, a tensor that a node saved for its backward and that is then written
// in place makes that backward throw, before it pushes anything, rather than
// use the new values; so does a graph freed by an earlier backward.
//
//   Tensor w = randn({10, 784}).set_requires_grad();
//   Tensor b = zeros({10}).set_requires_grad();
//   auto [loss, probs] = softmax_cross_entropy(linear(x, w, b), labels);
//   backward(loss);            // queues the backward, returns at once
//   { NoGradGuard g; sgd_step_(w, w.grad(), velocity, {.lr = 0.1}); }
#pragma once

#include <functional>

#include <tide/core/autograd.h>
#include <tide/core/loc.h>
#include <tide/core/tensor.h>

namespace tide {

struct BackwardOptions {
  /// Keep what the nodes saved, so that a second backward can run through
  /// the same graph (otherwise it is freed as the backward walks it, and a
  /// second backward throws tide::UsageError).
  bool retain_graph = false;
};

/// Accumulates into every leaf that `root` depends on the gradient of
/// `root` weighted by `grad` (root's shape, dtype and device; when
/// undefined, root must have one element and the weight is 1). Gradients
/// add to what .grad already holds, as in PyTorch; a leaf's first gradient
/// may be a tensor of the graph itself, so treat .grad as read-only (set
/// it with set_grad, or clear it with set_grad(Tensor())). Runs with grad
/// mode off (no graph of the backward is recorded). tide::UsageError when
/// root does not require a gradient or the graph was freed.
void backward(const Tensor& root, const Tensor& grad = Tensor(), BackwardOptions options = {},
              Loc loc = Loc::current());

/// The name of the op that made `t` ("add", "linear", ...), or "" for a leaf.
const char* grad_fn_name(const Tensor& t);

/// Calls `hook(grad)` each time a backward has accumulated all of its
/// contributions to leaf `t`'s gradient (torch's
/// register_post_accumulate_grad_hook): a gradient reducer starts a
/// bucket's reduction from there, while the backward of the layers below
/// is still being pushed. tide::UsageError when t is not a leaf that
/// requires a gradient.
void register_post_accumulate_grad_hook(const Tensor& t, std::function<void(const Tensor& grad)> hook);

}  // namespace tide
