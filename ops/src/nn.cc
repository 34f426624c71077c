// nn ops: the frontend checks and one push per op. The CPU kernels are in
// ops/src/cpu/nn_kernels.h (and the gemm in ops/src/cpu/gemm.h); on a CUDA
// device the same checks run and the closure calls the launchers in
// ops/src/cuda/nn_kernels.h and ops/src/cuda/blas.h instead.
#include <tide/ops/nn.h>

#include <cmath>
#include <limits>
#include <string>

#include "cpu/elementwise_kernels.h"
#include "cpu/gemm.h"
#include "cpu/nn_kernels.h"
#include "nn_checks.h"
#include "op_util.h"
#ifdef TIDE_HAVE_CUDA
#include <tide/ops/linalg.h>

#include "cuda/blas.h"
#include "cuda/nn_kernels.h"
#endif

namespace tide {

namespace {

using namespace detail;

#ifdef TIDE_HAVE_CUDA
/// The f32 products follow the matmul precision setting, read now (at push
/// time); f64 ones are always exact.
MatmulPrecision gpu_gemm_precision(DType dt) {
  return dt == DType::f32 ? matmul_precision() : MatmulPrecision::exact;
}

/// Pushes c = op(a) op(b) on a's CUDA device: linear's two backward gemms.
Tensor push_gpu_gemm(Engine& e, const char* name, const Tensor& a, const Tensor& b, GemmDims d,
                     Loc loc) {
  const DType dt = a.dtype();
  const MatmulPrecision p = gpu_gemm_precision(dt);
  return push_new(
      e, name, Shape{d.m, d.n}, dt, a.device(), {a.storage(), b.storage()},
      [d, dt, p](const OpContext& ctx) {
        cuda_kernels::gemm(ctx.native_stream, dt, p, ctx.in<void>(0), ctx.in<void>(1),
                           ctx.out<void>(0), d);
      },
      loc);
}
#endif

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
#ifdef TIDE_HAVE_CUDA
  if (x.device().is_cuda()) {
    const DType dt = x.dtype();
    const MatmulPrecision p = gpu_gemm_precision(dt);
    return push_new(
        e, name, Shape{n, out}, dt, x.device(), {x.storage(), w.storage(), b.storage()},
        [d, dt, p](const OpContext& ctx) {
          cuda_kernels::gemm(ctx.native_stream, dt, p, ctx.in<void>(0), ctx.in<void>(1),
                             ctx.out<void>(0), d);
          cuda_kernels::add_row_bias(ctx.native_stream, dt, ctx.out<void>(0), ctx.in<void>(2), d.m, d.n);
        },
        loc);
  }
#endif
  return dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return push_new(
        e, name, Shape{n, out}, x.dtype(), x.device(), {x.storage(), w.storage(), b.storage()},
        [d](const OpContext& ctx) {
          cpu_kernels::linear_forward(ctx.in<T>(0), ctx.in<T>(1), ctx.in<T>(2), ctx.out<T>(0), d);
        },
        loc);
  });
}

Tensor linear_backward_weight(const Tensor& dy, const Tensor& x, Loc loc) {
  const char* name = "linear_backward_weight";
  const Arg ady{dy, "dy"}, ax{x, "x"};
  Engine& e = engine_for_args(name, {ady, ax});
  check_ndim(name, ady, 2, "[N, out]");
  check_ndim(name, ax, 2, "[N, in]");
  check_extent(name, ady, 0, ax, 0, "N");
  check_floating_pair(name, ady, ax);
  const std::int64_t n = dy.shape()[0], out = dy.shape()[1], in = x.shape()[1];
  // dw [out, in] = dy^T [out, N] x [N, in].
  const GemmDims d = gemm_dims(name, out, in, n, true, false);
#ifdef TIDE_HAVE_CUDA
  if (dy.device().is_cuda())
    return push_gpu_gemm(e, name, dy, x, d, loc);
#endif
  return dispatch_dtype(dy.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return push_new(
        e, name, Shape{out, in}, dy.dtype(), dy.device(), {dy.storage(), x.storage()},
        [d](const OpContext& ctx) { cpu_kernels::gemm(ctx.in<T>(0), ctx.in<T>(1), ctx.out<T>(0), d); },
        loc);
  });
}

Tensor linear_backward_bias(const Tensor& dy, Loc loc) {
  const char* name = "linear_backward_bias";
  const Arg ady{dy, "dy"};
  Engine& e = engine_for_args(name, {ady});
  check_ndim(name, ady, 2, "[N, out]");
  check_floating_arg(name, ady);
  const std::int64_t rows = dy.shape()[0], cols = dy.shape()[1];
#ifdef TIDE_HAVE_CUDA
  if (dy.device().is_cuda()) {
    const DType dt = dy.dtype();
    return push_new(
        e, name, Shape{cols}, dt, dy.device(), {dy.storage()},
        [dt, rows, cols](const OpContext& ctx) {
          cuda_kernels::column_sums(ctx.native_stream, dt, ctx.in<void>(0), ctx.out<void>(0), rows, cols);
        },
        loc);
  }
#endif
  return dispatch_dtype(dy.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return push_new(
        e, name, Shape{cols}, dy.dtype(), dy.device(), {dy.storage()},
        [rows, cols](const OpContext& ctx) {
          cpu_kernels::column_sums(ctx.in<T>(0), ctx.out<T>(0), rows, cols);
        },
        loc);
  });
}

Tensor linear_backward_input(const Tensor& dy, const Tensor& w, Loc loc) {
  const char* name = "linear_backward_input";
  const Arg ady{dy, "dy"}, aw{w, "w"};
  Engine& e = engine_for_args(name, {ady, aw});
  check_ndim(name, ady, 2, "[N, out]");
  check_ndim(name, aw, 2, "[out, in]");
  check_extent(name, ady, 1, aw, 0, "out");
  check_floating_pair(name, ady, aw);
  const std::int64_t n = dy.shape()[0], out = dy.shape()[1], in = w.shape()[1];
  // dx [N, in] = dy [N, out] w [out, in].
  const GemmDims d = gemm_dims(name, n, in, out, false, false);
#ifdef TIDE_HAVE_CUDA
  if (dy.device().is_cuda())
    return push_gpu_gemm(e, name, dy, w, d, loc);
#endif
  return dispatch_dtype(dy.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return push_new(
        e, name, Shape{n, in}, dy.dtype(), dy.device(), {dy.storage(), w.storage()},
        [d](const OpContext& ctx) { cpu_kernels::gemm(ctx.in<T>(0), ctx.in<T>(1), ctx.out<T>(0), d); },
        loc);
  });
}

// ---------------------------------------------------------------------------
// Activations and loss.

Tensor relu_backward(const Tensor& dy, const Tensor& x, Loc loc) {
  const char* name = "relu_backward";
  Engine& e = engine_for_args(name, {{dy, "dy"}, {x, "x"}});
  check_same_shape(name, dy, x);
  check_same_dtype(name, dy, x);
  const std::int64_t n = dy.numel();
#ifdef TIDE_HAVE_CUDA
  if (dy.device().is_cuda()) {
    const DType dt = dy.dtype();
    return push_new(
        e, name, dy.shape(), dt, dy.device(), {dy.storage(), x.storage()},
        [dt, n](const OpContext& ctx) {
          cuda_kernels::relu_backward(ctx.native_stream, dt, ctx.in<void>(0), ctx.in<void>(1),
                                      ctx.out<void>(0), n);
        },
        loc);
  }
#endif
  return dispatch_dtype(dy.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return push_new(
        e, name, dy.shape(), dy.dtype(), dy.device(), {dy.storage(), x.storage()},
        [n](const OpContext& ctx) {
          cpu_kernels::relu_backward(ctx.in<T>(0), ctx.in<T>(1), ctx.out<T>(0), n);
        },
        loc);
  });
}

SoftmaxCrossEntropy softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Loc loc) {
  const char* name = "softmax_cross_entropy";
  const Arg al{logits, "logits"};
  Engine& e = engine_for_args(name, {al, {labels, "labels"}});
  check_classification(name, al, labels);
  const std::int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  // Two outputs, so not push_new: both allocated here, written by one op.
  SoftmaxCrossEntropy r{Tensor::empty(Shape{}, logits.dtype(), logits.device()),
                        Tensor::empty(logits.shape(), logits.dtype(), logits.device())};
#ifdef TIDE_HAVE_CUDA
  if (logits.device().is_cuda()) {
    const DType dt = logits.dtype();
    push_into(
        e, name, logits.device(), {logits.storage(), labels.storage()},
        {r.loss.storage(), r.probs.storage()},
        [dt, rows, classes](const OpContext& ctx) {
          cuda_kernels::softmax_cross_entropy(ctx.native_stream, dt, ctx.in<void>(0),
                                              ctx.in<std::int32_t>(1), ctx.out<void>(0),
                                              ctx.out<void>(1), rows, classes);
        },
        loc);
    return r;
  }
#endif
  dispatch_dtype(logits.dtype(), [&](auto tag) {
    using T = decltype(tag);
    push_into(
        e, name, logits.device(), {logits.storage(), labels.storage()},
        {r.loss.storage(), r.probs.storage()},
        [rows, classes](const OpContext& ctx) {
          cpu_kernels::softmax_cross_entropy(ctx.in<T>(0), ctx.in<std::int32_t>(1), ctx.out<T>(0),
                                             ctx.out<T>(1), rows, classes);
        },
        loc);
  });
  return r;
}

Tensor softmax_cross_entropy_backward(const Tensor& probs, const Tensor& labels, Loc loc) {
  const char* name = "softmax_cross_entropy_backward";
  const Arg ap{probs, "probs"};
  Engine& e = engine_for_args(name, {ap, {labels, "labels"}});
  check_classification(name, ap, labels);
  const std::int64_t rows = probs.shape()[0], classes = probs.shape()[1];
#ifdef TIDE_HAVE_CUDA
  if (probs.device().is_cuda()) {
    const DType dt = probs.dtype();
    return push_new(
        e, name, probs.shape(), dt, probs.device(), {probs.storage(), labels.storage()},
        [dt, rows, classes](const OpContext& ctx) {
          cuda_kernels::softmax_cross_entropy_backward(ctx.native_stream, dt, ctx.in<void>(0),
                                                       ctx.in<std::int32_t>(1), ctx.out<void>(0),
                                                       rows, classes);
        },
        loc);
  }
#endif
  return dispatch_dtype(probs.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return push_new(
        e, name, probs.shape(), probs.dtype(), probs.device(), {probs.storage(), labels.storage()},
        [rows, classes](const OpContext& ctx) {
          cpu_kernels::softmax_cross_entropy_backward(ctx.in<T>(0), ctx.in<std::int32_t>(1),
                                                      ctx.out<T>(0), rows, classes);
        },
        loc);
  });
}

// ---------------------------------------------------------------------------
// Metrics.

Tensor argmax(const Tensor& a, int axis, Loc loc) {
  const char* name = "argmax";
  Engine& e = engine_for(name, a);
  const int ax = normalize_axis(name, a, axis);
  const Shape& s = a.shape();
  std::int64_t outer = 1, inner = 1;
  const std::int64_t len = s[ax];
  for (int d = 0; d < ax; ++d) outer *= s[d];
  for (int d = ax + 1; d < s.ndim(); ++d) inner *= s[d];
  if (len == 0)
    throw ValueError(op_prefix(name) + "axis " + std::to_string(axis) + " of shape " + s.str() +
                     " has no elements to choose from");
  if (len > std::numeric_limits<std::int32_t>::max())
    throw ShapeError(op_prefix(name) + "axis " + std::to_string(axis) + " of shape " + s.str() +
                     " is too long for i32 indices");
#ifdef TIDE_HAVE_CUDA
  if (a.device().is_cuda()) {
    const DType dt = a.dtype();
    return push_new(
        e, name, s.without(ax), DType::i32, a.device(), {a.storage()},
        [dt, outer, len, inner](const OpContext& ctx) {
          cuda_kernels::argmax(ctx.native_stream, dt, ctx.in<void>(0), ctx.out<std::int32_t>(0),
                               outer, len, inner);
        },
        loc);
  }
#endif
  return dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return push_new(
        e, name, s.without(ax), DType::i32, a.device(), {a.storage()},
        [outer, len, inner](const OpContext& ctx) {
          cpu_kernels::argmax(ctx.in<T>(0), ctx.out<std::int32_t>(0), outer, len, inner);
        },
        loc);
  });
}


// ---------------------------------------------------------------------------
// Optimizers. The updated tensors are listed as reads as well as writes: a
// failed producer's poison then propagates into them instead of being
// cleared by this op's successful write.

void sgd_step_(Tensor& param, const Tensor& grad, Tensor& velocity, const SgdOptions& options,
               Loc loc) {
  const char* name = "sgd_step_";
  const Arg ap{param, "param"}, ag{grad, "grad"}, av{velocity, "velocity"};
  Engine& e = engine_for_args(name, {ap, ag, av});
  check_optimizer_tensors(name, ap, ag, {av});
  check_option(name, "lr", options.lr, Range::non_negative);
  check_option(name, "momentum", options.momentum, Range::non_negative);
  check_option(name, "weight_decay", options.weight_decay, Range::non_negative);
  const std::int64_t n = param.numel();
  const SgdOptions o = options;
#ifdef TIDE_HAVE_CUDA
  if (param.device().is_cuda()) {
    const DType dt = param.dtype();
    push_into(
        e, name, param.device(), {param.storage(), grad.storage(), velocity.storage()},
        {param.storage(), velocity.storage()},
        [dt, n, o](const OpContext& ctx) {
          cuda_kernels::sgd_step(ctx.native_stream, dt, ctx.out<void>(0), ctx.in<void>(1),
                                 ctx.out<void>(1), n, o.lr, o.momentum, o.weight_decay);
        },
        loc);
    return;
  }
#endif
  dispatch_dtype(param.dtype(), [&](auto tag) {
    using T = decltype(tag);
    push_into(
        e, name, param.device(), {param.storage(), grad.storage(), velocity.storage()},
        {param.storage(), velocity.storage()},
        [n, o](const OpContext& ctx) {
          cpu_kernels::sgd_step(ctx.out<T>(0), ctx.in<T>(1), ctx.out<T>(1), n, o);
        },
        loc);
  });
}

void adam_step_(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, std::int64_t step,
                const AdamOptions& options, Loc loc) {
  const char* name = "adam_step_";
  const Arg ap{param, "param"}, ag{grad, "grad"}, am{m, "m"}, av{v, "v"};
  Engine& e = engine_for_args(name, {ap, ag, am, av});
  check_optimizer_tensors(name, ap, ag, {am, av});
  check_option(name, "lr", options.lr, Range::non_negative);
  check_option(name, "beta1", options.beta1, Range::unit_interval);
  check_option(name, "beta2", options.beta2, Range::unit_interval);
  check_option(name, "eps", options.eps, Range::positive);
  check_option(name, "weight_decay", options.weight_decay, Range::non_negative);
  if (step < 1)
    throw ValueError(op_prefix(name) + "step counts from 1, got " + std::to_string(step));
  const std::int64_t n = param.numel();
  // beta < 1 and step >= 1, so both corrections are > 0.
  const double steps = static_cast<double>(step);
  const cpu_kernels::AdamCoefficients c{options, options.lr / (1.0 - std::pow(options.beta1, steps)),
                                        std::sqrt(1.0 - std::pow(options.beta2, steps))};
#ifdef TIDE_HAVE_CUDA
  if (param.device().is_cuda()) {
    const DType dt = param.dtype();
    const cuda_kernels::AdamScalars sc{options.beta1, options.beta2, options.eps, options.weight_decay,
                                       c.step_size, c.bias_correction2_sqrt};
    push_into(
        e, name, param.device(), {param.storage(), grad.storage(), m.storage(), v.storage()},
        {param.storage(), m.storage(), v.storage()},
        [dt, n, sc](const OpContext& ctx) {
          cuda_kernels::adam_step(ctx.native_stream, dt, ctx.out<void>(0), ctx.in<void>(1),
                                  ctx.out<void>(1), ctx.out<void>(2), n, sc);
        },
        loc);
    return;
  }
#endif
  dispatch_dtype(param.dtype(), [&](auto tag) {
    using T = decltype(tag);
    push_into(
        e, name, param.device(), {param.storage(), grad.storage(), m.storage(), v.storage()},
        {param.storage(), m.storage(), v.storage()},
        [n, c](const OpContext& ctx) {
          cpu_kernels::adam_step(ctx.out<T>(0), ctx.in<T>(1), ctx.out<T>(1), ctx.out<T>(2), n, c);
        },
        loc);
  });
}

}  // namespace tide
