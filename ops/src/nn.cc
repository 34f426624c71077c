// nn ops: the frontend checks and one push per op, calling the device
// kind's nn and linalg tables (kernels.h). The CPU kernels are in
// ops/src/cpu/nn_kernels.h (and the gemm in ops/src/cpu/gemm.h), the CUDA
// ones in ops/src/cuda/nn_kernels.h and ops/src/cuda/blas.h.
#include <tide/ops/nn.h>

#include <limits>
#include <string>

#include "autograd/record.h"
#include "gemm_precision.h"
#include "kernels.h"
#include "nn_checks.h"
#include "op_util.h"

namespace tide {

namespace {

using namespace detail;
using kernels::kernel_for;

/// Pushes c = op(a) op(b) on a's device: linear's two backward gemms.
Tensor push_gemm(Engine& e, const char* name, const Tensor& a, const Tensor& b, GemmDims d, Loc loc) {
  const auto fn = kernel_for(name, a.device(), kernels::linalg(a.device()).gemm);
  const DType dt = a.dtype();
  const MatmulPrecision p = gemm_precision(dt);
  return push_new(
      e, name, Shape{d.m, d.n}, dt, a.device(), {a.storage(), b.storage()},
      [fn, d, dt, p](const OpContext& ctx) {
        fn(ctx.native_stream, dt, p, ctx.in<void>(0), ctx.in<void>(1), ctx.out<void>(0), d);
      },
      loc);
}

}  // namespace

// ---------------------------------------------------------------------------
// Fully connected layer.

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, Loc loc) {
  const char* name = "linear";
  const Arg ax{x, "x"}, aw{w, "w"}, ab{b, "b"};
  Engine& e = engine_for_args(name, {ax, aw, ab});
  check_ndim(name, ax, 2, "[N, in]");
  check_ndim(name, aw, 2, "[out, in]");
  check_ndim(name, ab, 1, "[out]");
  check_extent(name, ax, 1, aw, 1, "in");
  check_extent(name, aw, 0, ab, 0, "out");
  check_floating_pair(name, ax, aw);
  check_floating_pair(name, ax, ab);
  const std::int64_t n = x.shape()[0], out = w.shape()[0], in = x.shape()[1];
  const GemmDims d = gemm_dims(name, n, out, in, false, true);
  const auto fn = kernel_for(name, x.device(), kernels::nn(x.device()).linear);
  const DType dt = x.dtype();
  const MatmulPrecision p = gemm_precision(dt);
  Tensor y = push_new(
      e, name, Shape{n, out}, dt, x.device(), {x.storage(), w.storage(), b.storage()},
      [fn, d, dt, p](const OpContext& ctx) {
        fn(ctx.native_stream, dt, p, ctx.in<void>(0), ctx.in<void>(1), ctx.in<void>(2), ctx.out<void>(0), d);
      },
      loc);
  if (autograd::wants(x, w, b)) autograd::record_linear(y, x, w, b, loc);
  return y;
}

namespace {

/// The checks of a backward GEMM of linear: dy [N, out] and `other` (shaped
/// `layout`) are 2-d floating tensors of one dtype, and dy's axis `dy_axis`
/// and other's axis `other_axis` (the extent called `axis`) agree. Returns
/// their engine.
Engine& check_linear_grad(const char* name, const Tensor& dy, const Arg& other, const char* layout, int dy_axis,
                          int other_axis, const char* axis) {
  const Arg ady{dy, "dy"};
  Engine& e = engine_for_args(name, {ady, other});
  check_ndim(name, ady, 2, "[N, out]");
  check_ndim(name, other, 2, layout);
  check_extent(name, ady, dy_axis, other, other_axis, axis);
  check_floating_pair(name, ady, other);
  return e;
}

}  // namespace

Tensor linear_backward_weight(const Tensor& dy, const Tensor& x, Loc loc) {
  const char* name = "linear_backward_weight";
  Engine& e = check_linear_grad(name, dy, Arg{x, "x"}, "[N, in]", 0, 0, "N");
  const std::int64_t n = dy.shape()[0], out = dy.shape()[1], in = x.shape()[1];
  // dw [out, in] = dy^T [out, N] x [N, in].
  const GemmDims d = gemm_dims(name, out, in, n, true, false);
  Tensor dw = push_gemm(e, name, dy, x, d, loc);
  if (autograd::wants(dy, x)) autograd::record_not_differentiable(name, dw, {&dy, &x}, loc);
  return dw;
}

Tensor linear_backward_bias(const Tensor& dy, Loc loc) {
  const char* name = "linear_backward_bias";
  const Arg ady{dy, "dy"};
  Engine& e = engine_for_args(name, {ady});
  check_ndim(name, ady, 2, "[N, out]");
  check_floating_arg(name, ady);
  const std::int64_t rows = dy.shape()[0], cols = dy.shape()[1];
  const auto fn = kernel_for(name, dy.device(), kernels::nn(dy.device()).column_sums);
  const DType dt = dy.dtype();
  Tensor db = push_new(
      e, name, Shape{cols}, dt, dy.device(), {dy.storage()},
      [fn, dt, rows, cols](const OpContext& ctx) {
        fn(ctx.native_stream, dt, ctx.in<void>(0), ctx.out<void>(0), rows, cols);
      },
      loc);
  if (autograd::wants(dy)) autograd::record_not_differentiable(name, db, {&dy}, loc);
  return db;
}

Tensor linear_backward_input(const Tensor& dy, const Tensor& w, Loc loc) {
  const char* name = "linear_backward_input";
  Engine& e = check_linear_grad(name, dy, Arg{w, "w"}, "[out, in]", 1, 0, "out");
  const std::int64_t n = dy.shape()[0], out = dy.shape()[1], in = w.shape()[1];
  // dx [N, in] = dy [N, out] w [out, in].
  const GemmDims d = gemm_dims(name, n, in, out, false, false);
  Tensor dx = push_gemm(e, name, dy, w, d, loc);
  if (autograd::wants(dy, w)) autograd::record_not_differentiable(name, dx, {&dy, &w}, loc);
  return dx;
}

// ---------------------------------------------------------------------------
// Activations and loss.

Tensor relu_backward(const Tensor& dy, const Tensor& x, Loc loc) {
  const char* name = "relu_backward";
  Engine& e = engine_for_args(name, {{dy, "dy"}, {x, "x"}});
  check_same_shape(name, dy, x);
  check_same_dtype(name, dy, x);
  if (x.dtype() == DType::b8) throw DTypeError(op_prefix(name) + "takes numbers, not bool tensors");
  const std::int64_t n = dy.numel();
  const auto fn = kernel_for(name, dy.device(), kernels::nn(dy.device()).relu_backward);
  const DType dt = dy.dtype();
  Tensor dx = push_new(
      e, name, dy.shape(), dt, dy.device(), {dy.storage(), x.storage()},
      [fn, dt, n](const OpContext& ctx) {
        fn(ctx.native_stream, dt, ctx.in<void>(0), ctx.in<void>(1), ctx.out<void>(0), n);
      },
      loc);
  if (autograd::wants(dy, x)) autograd::record_not_differentiable(name, dx, {&dy, &x}, loc);
  return dx;
}

namespace {

/// Labels as the kernels take them: i64 ones converted (one op; a value
/// beyond i32 saturates, so it is still out of range).
Tensor i32_labels(const Tensor& labels, Loc loc) {
  return labels.dtype() == DType::i32 ? labels : to_dtype(labels, DType::i32, loc);
}

}  // namespace

SoftmaxCrossEntropy softmax_cross_entropy(const Tensor& logits, const Tensor& given_labels, Loc loc) {
  const char* name = "softmax_cross_entropy";
  const Arg al{logits, "logits"};
  Engine& e = engine_for_args(name, {al, {given_labels, "labels"}});
  check_classification(name, al, given_labels);
  const Tensor labels = i32_labels(given_labels, loc);
  const std::int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const auto fn = kernel_for(name, logits.device(), kernels::nn(logits.device()).softmax_cross_entropy);
  // Two outputs, so not push_new: both allocated here, written by one op.
  SoftmaxCrossEntropy r{Tensor::empty(Shape{}, logits.dtype(), logits.device()),
                        Tensor::empty(logits.shape(), logits.dtype(), logits.device())};
  const DType dt = logits.dtype();
  push_into(
      e, name, logits.device(), {logits.storage(), labels.storage()}, {r.loss.storage(), r.probs.storage()},
      [fn, dt, rows, classes](const OpContext& ctx) {
        fn(ctx.native_stream, dt, ctx.in<void>(0), ctx.in<std::int32_t>(1), ctx.out<void>(0), ctx.out<void>(1),
           rows, classes);
      },
      loc);
  // The loss is differentiable; probs, like torch's, would need softmax's own
  // backward, which tide does not have: they are a result that needs none.
  if (autograd::wants(logits)) autograd::record_softmax_cross_entropy(r.loss, r.probs, logits, labels, loc);
  return r;
}

Tensor softmax_cross_entropy_backward(const Tensor& probs, const Tensor& given_labels, Loc loc) {
  const char* name = "softmax_cross_entropy_backward";
  const Arg ap{probs, "probs"};
  Engine& e = engine_for_args(name, {ap, {given_labels, "labels"}});
  check_classification(name, ap, given_labels);
  const Tensor labels = i32_labels(given_labels, loc);
  const std::int64_t rows = probs.shape()[0], classes = probs.shape()[1];
  const auto fn = kernel_for(name, probs.device(), kernels::nn(probs.device()).softmax_cross_entropy_backward);
  const DType dt = probs.dtype();
  Tensor d = push_new(
      e, name, probs.shape(), dt, probs.device(), {probs.storage(), labels.storage()},
      [fn, dt, rows, classes](const OpContext& ctx) {
        fn(ctx.native_stream, dt, ctx.in<void>(0), ctx.in<std::int32_t>(1), ctx.out<void>(0), rows, classes);
      },
      loc);
  if (autograd::wants(probs)) autograd::record_not_differentiable(name, d, {&probs}, loc);
  return d;
}

// ---------------------------------------------------------------------------
// Metrics.

Tensor argmax(const Tensor& a, int axis, DType index, Loc loc) {
  const char* name = "argmax";
  Engine& e = engine_for(name, a);
  if (index != DType::i32 && index != DType::i64)
    throw DTypeError(op_prefix(name) + "indices are i32 or i64, not " + dtype_name(index));
  if (a.dtype() == DType::b8) throw DTypeError(op_prefix(name) + "takes numbers, not a bool tensor");
  const int ax = normalize_axis(name, a, axis);
  const Shape& s = a.shape();
  std::int64_t outer = 1, inner = 1;
  const std::int64_t len = s[ax];
  for (int d = 0; d < ax; ++d) outer *= s[d];
  for (int d = ax + 1; d < s.ndim(); ++d) inner *= s[d];
  if (len == 0)
    throw ValueError(op_prefix(name) + "axis " + std::to_string(axis) + " of shape " + s.str() +
                     " has no elements to choose from");
  if (index == DType::i32 && len > std::numeric_limits<std::int32_t>::max())
    throw ShapeError(op_prefix(name) + "axis " + std::to_string(axis) + " of shape " + s.str() +
                     " is too long for i32 indices (ask for i64)");
  const auto fn = kernel_for(name, a.device(), kernels::nn(a.device()).argmax);
  const DType dt = a.dtype();
  return push_new(
      e, name, s.without(ax), index, a.device(), {a.storage()},
      [fn, dt, index, outer, len, inner](const OpContext& ctx) {
        fn(ctx.native_stream, dt, ctx.in<void>(0), index, ctx.out<void>(0), outer, len, inner);
      },
      loc);
}

/// argmax of a map that reverses the order and keeps ties and the first
/// NaN: -a for floats, ~a = -a - 1 for integers (wrapping, so no value
/// collides).
Tensor argmin(const Tensor& a, int axis, DType index, Loc loc) {
  const char* name = "argmin";
  engine_for(name, a);
  if (a.dtype() == DType::b8) throw DTypeError(op_prefix(name) + "takes numbers, not a bool tensor");
  normalize_axis(name, a, axis);
  if (index != DType::i32 && index != DType::i64)
    throw DTypeError(op_prefix(name) + "indices are i32 or i64, not " + dtype_name(index));
  const Tensor reversed = is_floating(a.dtype()) ? neg(a, loc) : sub(neg(a, loc), 1.0, loc);
  return argmax(reversed, axis, index, loc);
}

}  // namespace tide
