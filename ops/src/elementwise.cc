// Elementwise ops: check on the frontend, then push one loop over the
// contiguous elements (ops/src/cpu/elementwise_kernels.h), or on a CUDA
// device one kernel launch (ops/src/cuda/elementwise_kernels.h). The checks
// are shared; only the closure differs.
#include <tide/ops/elementwise.h>
#include <tide/ops/nn.h>
#include <tide/core/copy.h>

#include <cstring>
#include <string>
#include <type_traits>

#include "cpu/elementwise_kernels.h"
#include "op_util.h"
#ifdef TIDE_HAVE_CUDA
#include "cuda/elementwise_kernels.h"
#endif

namespace tide {

namespace {

using namespace detail;

#ifdef TIDE_HAVE_CUDA
/// The CUDA launcher's code for a CPU functor, so one template serves both.
template <typename F>
constexpr cuda_kernels::BinaryOp cuda_binary_op() {
  if constexpr (std::is_same_v<F, cpu_kernels::Add>) return cuda_kernels::BinaryOp::add;
  else if constexpr (std::is_same_v<F, cpu_kernels::Sub>) return cuda_kernels::BinaryOp::sub;
  else if constexpr (std::is_same_v<F, cpu_kernels::Mul>) return cuda_kernels::BinaryOp::mul;
  else if constexpr (std::is_same_v<F, cpu_kernels::Div>) return cuda_kernels::BinaryOp::div;
  else if constexpr (std::is_same_v<F, cpu_kernels::Eq>) return cuda_kernels::BinaryOp::eq;
  else static_assert(sizeof(F) == 0, "no CUDA kernel for this binary functor");
}

template <typename F>
constexpr cuda_kernels::UnaryOp cuda_unary_op() {
  if constexpr (std::is_same_v<F, cpu_kernels::Neg>) return cuda_kernels::UnaryOp::neg;
  else if constexpr (std::is_same_v<F, cpu_kernels::Exp>) return cuda_kernels::UnaryOp::exp;
  else if constexpr (std::is_same_v<F, cpu_kernels::Log>) return cuda_kernels::UnaryOp::log;
  else if constexpr (std::is_same_v<F, cpu_kernels::Relu>) return cuda_kernels::UnaryOp::relu;
  else static_assert(sizeof(F) == 0, "no CUDA kernel for this unary functor");
}
#endif

template <typename F>
Tensor binary(const char* name, const Tensor& a, const Tensor& b, Loc loc) {
  Engine& e = engine_for(name, a, b);
  check_same_dtype(name, a, b);
  check_same_shape(name, a, b);
  const std::int64_t n = a.numel();
#ifdef TIDE_HAVE_CUDA
  if (a.device().is_cuda()) {
    const DType dt = a.dtype();
    return push_new(
        e, name, a.shape(), dt, a.device(), {a.storage(), b.storage()},
        [n, dt](const OpContext& ctx) {
          cuda_kernels::launch_binary(cuda_binary_op<F>(), dt, ctx.in<void>(0), ctx.in<void>(1),
                                      ctx.out<void>(0), n, ctx.native_stream);
        },
        loc);
  }
#endif
  return dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return push_new(
        e, name, a.shape(), a.dtype(), a.device(), {a.storage(), b.storage()},
        [n](const OpContext& ctx) { cpu_kernels::map2(ctx.in<T>(0), ctx.in<T>(1), ctx.out<T>(0), n, F{}); },
        loc);
  });
}

/// An i32 division by a scalar zero is known on the frontend: refuse it
/// there rather than fail on the backend.
void check_scalar_divisor(const char* name, double s, DType t) {
  if (t == DType::i32 && static_cast<std::int32_t>(s) == 0)
    throw ValueError(op_prefix(name) + "integer division by zero (scalar " + std::to_string(s) +
                     " truncates to 0 in i32)");
}

/// a op s (or s op a when Reversed), the scalar converted to a's dtype.
template <typename F, bool Reversed>
Tensor with_scalar(const char* name, const Tensor& a, double s, Loc loc) {
  Engine& e = engine_for(name, a);
  check_scalar_fits(name, s, a.dtype());
  if constexpr (std::is_same_v<F, cpu_kernels::Div> && !Reversed) check_scalar_divisor(name, s, a.dtype());
  const std::int64_t n = a.numel();
#ifdef TIDE_HAVE_CUDA
  if (a.device().is_cuda()) {
    const DType dt = a.dtype();
    return push_new(
        e, name, a.shape(), dt, a.device(), {a.storage()},
        [n, dt, s](const OpContext& ctx) {
          cuda_kernels::launch_scalar(cuda_binary_op<F>(), Reversed, dt, ctx.in<void>(0), s,
                                      ctx.out<void>(0), n, ctx.native_stream);
        },
        loc);
  }
#endif
  return dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu_kernels::WithScalar<F, Reversed, T> f{static_cast<T>(s)};
    return push_new(
        e, name, a.shape(), a.dtype(), a.device(), {a.storage()},
        [n, f](const OpContext& ctx) { cpu_kernels::map1(ctx.in<T>(0), ctx.out<T>(0), n, f); }, loc);
  });
}

template <typename F>
Tensor unary(const char* name, const Tensor& a, bool floating_only, Loc loc) {
  Engine& e = engine_for(name, a);
  if (floating_only) check_floating(name, a.dtype());
  const std::int64_t n = a.numel();
#ifdef TIDE_HAVE_CUDA
  if (a.device().is_cuda()) {
    const DType dt = a.dtype();
    return push_new(
        e, name, a.shape(), dt, a.device(), {a.storage()},
        [n, dt](const OpContext& ctx) {
          cuda_kernels::launch_unary(cuda_unary_op<F>(), dt, ctx.in<void>(0), ctx.out<void>(0), n,
                                     ctx.native_stream);
        },
        loc);
  }
#endif
  return dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return push_new(
        e, name, a.shape(), a.dtype(), a.device(), {a.storage()},
        [n](const OpContext& ctx) { cpu_kernels::map1(ctx.in<T>(0), ctx.out<T>(0), n, F{}); }, loc);
  });
}

// In place: a's storage is both read and written, so the engine orders the
// op after every earlier reader and writer of a.
template <typename F>
void binary_inplace(const char* name, Tensor& a, const Tensor& b, Loc loc) {
  Engine& e = engine_for(name, a, b);
  check_same_dtype(name, a, b);
  check_same_shape(name, a, b);
  const std::int64_t n = a.numel();
#ifdef TIDE_HAVE_CUDA
  if (a.device().is_cuda()) {
    const DType dt = a.dtype();
    push_into(
        e, name, a.device(), {a.storage(), b.storage()}, {a.storage()},
        [n, dt](const OpContext& ctx) {
          cuda_kernels::launch_binary(cuda_binary_op<F>(), dt, ctx.in<void>(0), ctx.in<void>(1),
                                      ctx.out<void>(0), n, ctx.native_stream);
        },
        loc);
    return;
  }
#endif
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    push_into(
        e, name, a.device(), {a.storage(), b.storage()}, {a.storage()},
        [n](const OpContext& ctx) { cpu_kernels::map2(ctx.in<T>(0), ctx.in<T>(1), ctx.out<T>(0), n, F{}); },
        loc);
  });
}

template <typename F>
void scalar_inplace(const char* name, Tensor& a, double s, Loc loc) {
  Engine& e = engine_for(name, a);
  check_scalar_fits(name, s, a.dtype());
  const std::int64_t n = a.numel();
#ifdef TIDE_HAVE_CUDA
  if (a.device().is_cuda()) {
    const DType dt = a.dtype();
    push_into(
        e, name, a.device(), {a.storage()}, {a.storage()},
        [n, dt, s](const OpContext& ctx) {
          cuda_kernels::launch_scalar(cuda_binary_op<F>(), false, dt, ctx.in<void>(0), s,
                                      ctx.out<void>(0), n, ctx.native_stream);
        },
        loc);
    return;
  }
#endif
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu_kernels::WithScalar<F, false, T> f{static_cast<T>(s)};
    push_into(
        e, name, a.device(), {a.storage()}, {a.storage()},
        [n, f](const OpContext& ctx) { cpu_kernels::map1(ctx.in<T>(0), ctx.out<T>(0), n, f); }, loc);
  });
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, Loc loc) { return binary<cpu_kernels::Add>("add", a, b, loc); }
Tensor sub(const Tensor& a, const Tensor& b, Loc loc) { return binary<cpu_kernels::Sub>("sub", a, b, loc); }
Tensor mul(const Tensor& a, const Tensor& b, Loc loc) { return binary<cpu_kernels::Mul>("mul", a, b, loc); }
Tensor div(const Tensor& a, const Tensor& b, Loc loc) { return binary<cpu_kernels::Div>("div", a, b, loc); }

Tensor add(const Tensor& a, double s, Loc loc) { return with_scalar<cpu_kernels::Add, false>("add", a, s, loc); }
Tensor sub(const Tensor& a, double s, Loc loc) { return with_scalar<cpu_kernels::Sub, false>("sub", a, s, loc); }
Tensor rsub(const Tensor& a, double s, Loc loc) { return with_scalar<cpu_kernels::Sub, true>("rsub", a, s, loc); }
Tensor mul(const Tensor& a, double s, Loc loc) { return with_scalar<cpu_kernels::Mul, false>("mul", a, s, loc); }
Tensor div(const Tensor& a, double s, Loc loc) { return with_scalar<cpu_kernels::Div, false>("div", a, s, loc); }
Tensor rdiv(const Tensor& a, double s, Loc loc) { return with_scalar<cpu_kernels::Div, true>("rdiv", a, s, loc); }

Tensor neg(const Tensor& a, Loc loc) { return unary<cpu_kernels::Neg>("neg", a, false, loc); }
Tensor exp(const Tensor& a, Loc loc) { return unary<cpu_kernels::Exp>("exp", a, true, loc); }
Tensor log(const Tensor& a, Loc loc) { return unary<cpu_kernels::Log>("log", a, true, loc); }
Tensor relu(const Tensor& a, Loc loc) { return unary<cpu_kernels::Relu>("relu", a, false, loc); }

void add_(Tensor& a, const Tensor& b, Loc loc) { binary_inplace<cpu_kernels::Add>("add_", a, b, loc); }
void sub_(Tensor& a, const Tensor& b, Loc loc) { binary_inplace<cpu_kernels::Sub>("sub_", a, b, loc); }
void mul_(Tensor& a, const Tensor& b, Loc loc) { binary_inplace<cpu_kernels::Mul>("mul_", a, b, loc); }
void add_(Tensor& a, double s, Loc loc) { scalar_inplace<cpu_kernels::Add>("add_", a, s, loc); }
void mul_(Tensor& a, double s, Loc loc) { scalar_inplace<cpu_kernels::Mul>("mul_", a, s, loc); }

void copy_(Tensor& dst, const Tensor& src, Loc loc) {
  const char* name = "copy_";
  Engine& e = engine_of(name, dst, "dst");
  engine_of(name, src, "src");
  check_same_dtype(name, dst, src);
  check_same_shape(name, dst, src);
  const std::size_t nbytes = dst.nbytes();
  const Device to = dst.device(), from = src.device();
  // copy_bytes moves within a device with memmove semantics: copy_(t, t) is
  // legal and its source and destination coincide.
  push_into(
      e, name, copy_device(to, from), {src.storage()}, {dst.storage()},
      [nbytes, to, from](const OpContext& ctx) { copy_bytes(ctx, to, ctx.out<char>(0), from, ctx.in<char>(0), nbytes); },
      loc);
}

Tensor copy_to(const Tensor& src, Device device, Loc loc) {
  const char* name = "copy_to";
  Engine& e = engine_of(name, src, "src");
  e.check_device(device);
  const std::size_t nbytes = src.nbytes();
  const Device from = src.device();
  // On a GPU's copy stream (the source's for GPU to host), so transfers
  // overlap that GPU's compute.
  Tensor out = Tensor::empty(src.shape(), src.dtype(), device);
  OpDesc op;
  op.name = name;
  op.device = copy_device(device, from);
  op.stream = static_cast<int>(StreamKind::copy);
  op.fn = [nbytes, device, from](const OpContext& ctx) {
    copy_bytes(ctx, device, ctx.out<char>(0), from, ctx.in<char>(0), nbytes);
  };
  op.reads.add(src.storage());
  op.writes.add(out.storage());
  op.loc = loc;
  e.push(std::move(op));
  return out;
}

// Declared in nn.h: accuracy is sum(eq(argmax(logits, 1), labels)).
Tensor eq(const Tensor& a, const Tensor& b, Loc loc) { return binary<cpu_kernels::Eq>("eq", a, b, loc); }

}  // namespace tide
