// Elementwise ops: check on the frontend, then push one call of the kernel
// that the device kind's table holds for the op (kernels.h; the functors are
// in elementwise_functors.h, one per op for every device).
#include <tide/ops/elementwise.h>
#include <tide/core/copy.h>

#include <cmath>
#include <optional>
#include <type_traits>
#include <string>
#include <utility>

#include "autograd/record.h"
#include "broadcast_map.h"
#include "kernels.h"
#include "op_util.h"

namespace tide {

namespace {

using namespace detail;
using kernels::BinaryOp;
using kernels::UnaryOp;
using kernels::kernel_for;

constexpr int slot(BinaryOp op) { return static_cast<int>(op); }
constexpr int slot(UnaryOp op) { return static_cast<int>(op); }

// The op is a template argument and the helpers are forced inline, so each
// public function is one straight push path with its table slot fixed.

/// Pushes `kernel` reading `reads`: into a new tensor of `shape`, or, when
/// InPlace, into a itself (a's storage is then both read and written, so the
/// engine orders the op after every earlier reader and writer of a).
template <bool InPlace, typename Kernel>
[[gnu::always_inline]] inline auto push_like(Engine& e, const char* name, const Tensor& a, const Shape& shape,
                                             DType dtype, StorageList reads, Kernel kernel, Loc loc) {
  if constexpr (InPlace)
    push_into(e, name, a.device(), std::move(reads), {a.storage()}, std::move(kernel), loc, true);
  else
    return push_new(e, name, shape, dtype, a.device(), std::move(reads), std::move(kernel), loc, -1, true);
}

/// The comparisons and logical ops write bool, and take bool operands.
constexpr bool is_comparison(BinaryOp op) {
  return op == BinaryOp::eq || op == BinaryOp::ne || op == BinaryOp::gt || op == BinaryOp::ge ||
         op == BinaryOp::lt || op == BinaryOp::le;
}
constexpr bool writes_bool(BinaryOp op) {
  return is_comparison(op) || op == BinaryOp::logical_and || op == BinaryOp::logical_or ||
         op == BinaryOp::logical_xor;
}
template <BinaryOp Op>
constexpr DType out_dtype(DType t) {
  return writes_bool(Op) ? DType::b8 : t;
}

/// a op b flat, the result shaped `out`: one kernel call over n elements.
template <BinaryOp Op, bool InPlace>
[[gnu::always_inline]] inline auto binary_flat(Engine& e, const char* name, const Tensor& a, const Tensor& b,
                                               const Shape& out, Loc loc) {
  const Device dev = a.device();
  const auto fn = kernel_for(name, dev, kernels::elementwise(dev).binary[slot(Op)]);
  const std::int64_t n = out.numel();
  const DType dt = a.dtype();
  return push_like<InPlace>(
      e, name, a, out, out_dtype<Op>(dt), {a.storage(), b.storage()},
      [fn, dt, n](const OpContext& ctx) {
        fn(dt, ctx.in<void>(0), ctx.in<void>(1), ctx.out<void>(0), n, ctx.native_stream);
      },
      loc);
}

/// a op b for shapes that differ, out of line: numpy's broadcast (in place,
/// it must be a's own shape). Shapes that differ only by axes of extent 1
/// lay their elements out alike and take the flat kernel; others walk a
/// broadcast map.
template <BinaryOp Op, bool InPlace>
[[gnu::noinline]] auto binary_broadcast(Engine& e, const char* name, const Tensor& a, const Tensor& b, Loc loc) {
  const Shape out = broadcast_shapes(name, a.shape(), b.shape());
  if (InPlace && out != a.shape())
    throw ShapeError(op_prefix(name) + "b of shape " + b.shape().str() + " does not broadcast to a's shape " +
                     a.shape().str() + " (the result would be " + out.str() +
                     "; an in-place op keeps a's shape)");
  if (a.numel() == out.numel() && b.numel() == out.numel()) return binary_flat<Op, InPlace>(e, name, a, b, out, loc);
  const Device dev = a.device();
  const auto fn = kernel_for(name, dev, kernels::elementwise(dev).broadcast[slot(Op)]);
  const kernels::BroadcastMap map = broadcast_map(out, a.shape(), b.shape());
  const DType dt = a.dtype();
  return push_like<InPlace>(
      e, name, a, out, out_dtype<Op>(dt), {a.storage(), b.storage()},
      [fn, dt, map](const OpContext& ctx) {
        fn(dt, ctx.in<void>(0), ctx.in<void>(1), ctx.out<void>(0), map, ctx.native_stream);
      },
      loc);
}

/// a op b, into a new tensor or (InPlace) into a: equal shapes on the
/// straight path, others broadcast.
template <BinaryOp Op, bool InPlace = false>
[[gnu::always_inline]] inline auto binary(const char* name, const Tensor& a, const Tensor& b, Loc loc);

/// A bool operand beside a number tensor, out of line: taken as that
/// tensor's dtype (true is 1, as torch promotes it). Arithmetic on two bool
/// tensors, or into one, is refused; comparisons and logical ops take two
/// bools as they are (binary does not come here for them).
template <BinaryOp Op, bool InPlace>
[[gnu::noinline]] std::conditional_t<InPlace, void, Tensor> binary_bool(const char* name, const Tensor& a,
                                                                         const Tensor& b, Loc loc) {
  const bool a_bool = a.dtype() == DType::b8, b_bool = b.dtype() == DType::b8;
  if ((InPlace && a_bool) || (a_bool && b_bool))
    throw DTypeError(op_prefix(name) + "arithmetic on bool tensors is not defined (" + dtype_name(a.dtype()) +
                     " and " + dtype_name(b.dtype()) + "); convert them first (to_dtype)");
  // The shapes are checked before the conversion is queued.
  const Shape out = broadcast_shapes(name, a.shape(), b.shape());
  if (InPlace && out != a.shape())
    throw ShapeError(op_prefix(name) + "b of shape " + b.shape().str() + " does not broadcast to a's shape " +
                     a.shape().str() + " (an in-place op keeps a's shape)");
  const DType to = a_bool ? b.dtype() : a.dtype();
  return binary<Op, InPlace>(name, a_bool ? to_dtype(a, to, loc) : a, b_bool ? to_dtype(b, to, loc) : b, loc);
}

/// A differentiable op's operands with a bool one taken as the other's
/// dtype before anything is recorded, so that autograd saves numbers only.
[[gnu::always_inline]] inline std::pair<Tensor, Tensor> numbers(const char* name, const Tensor& a, const Tensor& b,
                                                                Loc loc) {
  if (!a.defined() || !b.defined() || ((a.dtype() == DType::b8) == (b.dtype() == DType::b8))) [[likely]]
    return {a, b};
  engine_for(name, a, b);  // devices and shapes checked before the conversion is queued
  broadcast_shapes(name, a.shape(), b.shape());
  if (a.dtype() == DType::b8) return {to_dtype(a, b.dtype(), loc), b};
  return {a, to_dtype(b, a.dtype(), loc)};
}

template <BinaryOp Op, bool InPlace>
[[gnu::always_inline]] inline auto binary(const char* name, const Tensor& a, const Tensor& b, Loc loc) {
  Engine& e = engine_for(name, a, b);
  if ((a.dtype() == DType::b8 || b.dtype() == DType::b8) && !(writes_bool(Op) && a.dtype() == b.dtype()))
      [[unlikely]]
    return binary_bool<Op, InPlace>(name, a, b, loc);
  check_same_dtype(name, a, b);
  if (a.shape() != b.shape()) [[unlikely]]
    return binary_broadcast<Op, InPlace>(e, name, a, b, loc);
  return binary_flat<Op, InPlace>(e, name, a, b, a.shape(), loc);
}

/// An integer division by a scalar zero is known on the frontend: refuse it
/// there rather than fail on the backend.
void check_scalar_divisor(const char* name, double s, DType t) {
  if (!is_floating(t) && std::trunc(s) == 0.0)
    throw ValueError(op_prefix(name) + "integer division by zero (scalar " + std::to_string(s) +
                     " truncates to 0 in " + dtype_name(t) + ")");
}

/// The kernel computing a op s, or s op a when Reversed.
template <BinaryOp Op, bool Reversed>
kernels::ScalarFn scalar_kernel(const char* name, Device d) {
  const kernels::Elementwise& t = kernels::elementwise(d);
  return kernel_for(name, d, Reversed ? t.rscalar[slot(Op)] : t.scalar[slot(Op)]);
}

/// a op s (or s op a when Reversed), the scalar converted to a's dtype;
/// into a new tensor or (InPlace) into a.
template <BinaryOp Op, bool Reversed, bool InPlace = false>
[[gnu::always_inline]] inline auto with_scalar(const char* name, const Tensor& a, double s, Loc loc);

/// A bool tensor with a number, out of line: taken as f32 (torch takes it
/// as the number's type); compared, as i32 (compare_scalar sees to
/// fractions).
template <BinaryOp Op, bool Reversed>
[[gnu::noinline]] Tensor with_scalar_bool(const char* name, const Tensor& a, double s, Loc loc) {
  return with_scalar<Op, Reversed>(name, to_dtype(a, is_comparison(Op) ? DType::i32 : DType::f32, loc), s, loc);
}

template <BinaryOp Op, bool Reversed, bool InPlace>
[[gnu::always_inline]] inline auto with_scalar(const char* name, const Tensor& a, double s, Loc loc) {
  Engine& e = engine_for(name, a);
  if (a.dtype() == DType::b8) [[unlikely]] {
    if constexpr (InPlace) throw DTypeError(op_prefix(name) + "arithmetic into a bool tensor is not defined");
    else return with_scalar_bool<Op, Reversed>(name, a, s, loc);
  }
  check_scalar_fits(name, s, a.dtype());
  if constexpr (Op == BinaryOp::div && !Reversed) check_scalar_divisor(name, s, a.dtype());
  const Device dev = a.device();
  const auto fn = scalar_kernel<Op, Reversed>(name, dev);
  const std::int64_t n = a.numel();
  const DType dt = a.dtype();
  return push_like<InPlace>(
      e, name, a, a.shape(), out_dtype<Op>(dt), {a.storage()},
      [fn, dt, n, s](const OpContext& ctx) { fn(dt, ctx.in<void>(0), s, ctx.out<void>(0), n, ctx.native_stream); },
      loc);
}

template <UnaryOp Op>
[[gnu::always_inline]] inline Tensor unary(const char* name, const Tensor& a, bool floating_only, Loc loc) {
  Engine& e = engine_for(name, a);
  if (a.dtype() == DType::b8) [[unlikely]]
    throw DTypeError(op_prefix(name) + "takes numbers, not a bool tensor; convert it first (to_dtype)");
  if (floating_only) check_floating(name, a.dtype());
  const Device dev = a.device();
  const auto fn = kernel_for(name, dev, kernels::elementwise(dev).unary[slot(Op)]);
  const std::int64_t n = a.numel();
  const DType dt = a.dtype();
  return push_like<false>(
      e, name, a, a.shape(), dt, {a.storage()},
      [fn, dt, n](const OpContext& ctx) { fn(dt, ctx.in<void>(0), ctx.out<void>(0), n, ctx.native_stream); }, loc);
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b) { return detail::broadcast_shapes("broadcast_shapes", a, b); }

namespace {

using autograd::wants;

/// The result of an op of two tensors, recorded when either needs a gradient.
[[gnu::always_inline]] inline Tensor recorded(Tensor out, autograd::Binary op, const Tensor& a, const Tensor& b,
                                              Loc loc) {
  if (wants(a, b)) [[unlikely]] autograd::record_binary(op, out, a, b, loc);
  return out;
}
[[gnu::always_inline]] inline Tensor recorded(Tensor out, autograd::Scalar op, const Tensor& a, double s, Loc loc) {
  if (wants(a)) [[unlikely]] autograd::record_scalar(op, out, a, s, loc);
  return out;
}
[[gnu::always_inline]] inline Tensor recorded(Tensor out, autograd::Unary op, const Tensor& a, Loc loc) {
  if (wants(a)) [[unlikely]] autograd::record_unary(op, out, a, loc);
  return out;
}

/// In-place ops are not recorded: refused on tensors that need a gradient
/// while grad mode is on (before anything is pushed).
[[gnu::always_inline]] inline void check_in_place(const char* name, const Tensor& a, const Tensor* b = nullptr) {
  if (a.autograd_meta() || (b && b->autograd_meta())) [[unlikely]] autograd::refuse_in_place(name, a, b);
}

/// a op= b. An operand overlapping a in part is copied first, once its
/// shapes are known to fit (so bad input still pushes nothing).
template <BinaryOp Op>
[[gnu::always_inline]] inline void binary_in_place(const char* name, Tensor& a, const Tensor& b, Loc loc) {
  check_in_place(name, a, &b);
  if (a.defined() && b.defined() && overlaps_partly(a, b)) [[unlikely]] {
    if (a.dtype() == b.dtype() && broadcast_shapes(name, a.shape(), b.shape()) == a.shape()) {
      binary<Op, true>(name, a, copy_to(b, b.device(), loc), loc);
      return;
    }
  }
  binary<Op, true>(name, a, b, loc);
}

/// a compared with s. An integer tensor is compared with the real value of
/// s, not with s truncated: a > 2.5 is a > 2, a >= 2.5 is a >= 3, a == 2.5
/// is never true, and a bound beyond the dtype's range (or NaN) gives a
/// constant result.
template <BinaryOp Op>
Tensor compare_scalar(const char* name, const Tensor& a, double s, Loc loc) {
  engine_for(name, a);
  if (a.dtype() == DType::b8) [[unlikely]] return compare_scalar<Op>(name, to_dtype(a, DType::i32, loc), s, loc);
  // An integer dtype holds [lo, hi) (both exact in a double).
  const double lo = a.dtype() == DType::i64 ? -9223372036854775808.0 : -2147483648.0, hi = -lo;
  if (is_floating(a.dtype()) || (std::trunc(s) == s && s >= lo && s < hi)) return with_scalar<Op, false>(name, a, s, loc);
  // Integer a, s fractional, NaN or out of range: the threshold t among
  // the integers, or a constant.
  const TensorOptions o{DType::b8, a.device()};
  auto constant = [&](bool v) { return full(a.shape(), v ? 1.0 : 0.0, o, loc); };
  if (std::isnan(s) || Op == BinaryOp::eq || Op == BinaryOp::ne) return constant(Op == BinaryOp::ne);
  const bool upward = Op == BinaryOp::ge || Op == BinaryOp::lt;  // a >= s is a >= ceil(s), a < s is a < ceil(s)
  const double t = upward ? std::ceil(s) : std::floor(s);      // a > s is a > floor(s), a <= s is a <= floor(s)
  const bool above_a = Op == BinaryOp::gt || Op == BinaryOp::ge;  // true where a is above t
  if (t >= hi) return constant(!above_a);                         // every a is below t
  if (t < lo) return constant(above_a);                           // every a is above t
  return with_scalar<Op, false>(name, a, t, loc);
}

}  // namespace

using autograd::Binary;
using autograd::Scalar;
using autograd::Unary;

Tensor add(const Tensor& a_in, const Tensor& b_in, Loc loc) {
  const auto [a, b] = numbers("add", a_in, b_in, loc);
  return recorded(binary<BinaryOp::add>("add", a, b, loc), Binary::add, a, b, loc);
}
Tensor sub(const Tensor& a_in, const Tensor& b_in, Loc loc) {
  const auto [a, b] = numbers("sub", a_in, b_in, loc);
  return recorded(binary<BinaryOp::sub>("sub", a, b, loc), Binary::sub, a, b, loc);
}
Tensor mul(const Tensor& a_in, const Tensor& b_in, Loc loc) {
  const auto [a, b] = numbers("mul", a_in, b_in, loc);
  return recorded(binary<BinaryOp::mul>("mul", a, b, loc), Binary::mul, a, b, loc);
}
Tensor div(const Tensor& a_in, const Tensor& b_in, Loc loc) {
  const auto [a, b] = numbers("div", a_in, b_in, loc);
  return recorded(binary<BinaryOp::div>("div", a, b, loc), Binary::div, a, b, loc);
}
Tensor pow(const Tensor& a_in, const Tensor& b_in, Loc loc) {
  if (a_in.defined()) check_floating("pow", a_in.dtype());
  const auto [a, b] = numbers("pow", a_in, b_in, loc);
  return recorded(binary<BinaryOp::pow>("pow", a, b, loc), Binary::pow, a, b, loc);
}
Tensor maximum(const Tensor& a_in, const Tensor& b_in, Loc loc) {
  const auto [a, b] = numbers("maximum", a_in, b_in, loc);
  return recorded(binary<BinaryOp::maximum>("maximum", a, b, loc), Binary::maximum, a, b, loc);
}
Tensor minimum(const Tensor& a_in, const Tensor& b_in, Loc loc) {
  const auto [a, b] = numbers("minimum", a_in, b_in, loc);
  return recorded(binary<BinaryOp::minimum>("minimum", a, b, loc), Binary::minimum, a, b, loc);
}
/// A bound for an integer tensor must be an integer: truncating 0.5 to 0
/// would clamp to the wrong value, and tide does not promote to floating.
static void check_whole_bound(const char* name, const Tensor& a, double s) {
  if (a.defined() && !is_floating(a.dtype()) && a.dtype() != DType::b8 && std::trunc(s) != s)
    throw ValueError(op_prefix(name) + "bound " + std::to_string(s) + " is not a whole number, and the tensor is " +
                     dtype_name(a.dtype()));
}

Tensor maximum(const Tensor& a, double s, Loc loc) {
  check_whole_bound("maximum", a, s);
  return recorded(with_scalar<BinaryOp::maximum, false>("maximum", a, s, loc), Scalar::maximum, a, s, loc);
}
Tensor minimum(const Tensor& a, double s, Loc loc) {
  check_whole_bound("minimum", a, s);
  return recorded(with_scalar<BinaryOp::minimum, false>("minimum", a, s, loc), Scalar::minimum, a, s, loc);
}
Tensor clamp(const Tensor& a, std::optional<double> lo, std::optional<double> hi, Loc loc) {
  const char* name = "clamp";
  engine_for(name, a);
  if (lo) check_scalar_fits(name, *lo, a.dtype());
  if (hi) check_scalar_fits(name, *hi, a.dtype());
  if (lo) check_whole_bound(name, a, *lo);
  if (hi) check_whole_bound(name, a, *hi);
  if (lo && hi && *lo > *hi)
    throw ValueError(op_prefix(name) + "min " + std::to_string(*lo) + " is above max " + std::to_string(*hi));
  if (!lo && !hi) throw ValueError(op_prefix(name) + "give min, max or both");
  Tensor r = lo ? maximum(a, *lo, loc) : a;
  return hi ? minimum(r, *hi, loc) : r;
}

// Comparisons are piecewise constant: their results need no gradient (as
// torch.eq's).
Tensor eq(const Tensor& a, const Tensor& b, Loc loc) { return binary<BinaryOp::eq>("eq", a, b, loc); }
Tensor ne(const Tensor& a, const Tensor& b, Loc loc) { return binary<BinaryOp::ne>("ne", a, b, loc); }
Tensor gt(const Tensor& a, const Tensor& b, Loc loc) { return binary<BinaryOp::gt>("gt", a, b, loc); }
Tensor ge(const Tensor& a, const Tensor& b, Loc loc) { return binary<BinaryOp::ge>("ge", a, b, loc); }
Tensor lt(const Tensor& a, const Tensor& b, Loc loc) { return binary<BinaryOp::lt>("lt", a, b, loc); }
Tensor le(const Tensor& a, const Tensor& b, Loc loc) { return binary<BinaryOp::le>("le", a, b, loc); }
Tensor eq(const Tensor& a, double s, Loc loc) { return compare_scalar<BinaryOp::eq>("eq", a, s, loc); }
Tensor ne(const Tensor& a, double s, Loc loc) { return compare_scalar<BinaryOp::ne>("ne", a, s, loc); }
Tensor gt(const Tensor& a, double s, Loc loc) { return compare_scalar<BinaryOp::gt>("gt", a, s, loc); }
Tensor ge(const Tensor& a, double s, Loc loc) { return compare_scalar<BinaryOp::ge>("ge", a, s, loc); }
Tensor lt(const Tensor& a, double s, Loc loc) { return compare_scalar<BinaryOp::lt>("lt", a, s, loc); }
Tensor le(const Tensor& a, double s, Loc loc) { return compare_scalar<BinaryOp::le>("le", a, s, loc); }

Tensor logical_and(const Tensor& a, const Tensor& b, Loc loc) {
  return binary<BinaryOp::logical_and>("logical_and", a, b, loc);
}
Tensor logical_or(const Tensor& a, const Tensor& b, Loc loc) {
  return binary<BinaryOp::logical_or>("logical_or", a, b, loc);
}
Tensor logical_xor(const Tensor& a, const Tensor& b, Loc loc) {
  return binary<BinaryOp::logical_xor>("logical_xor", a, b, loc);
}
Tensor logical_not(const Tensor& a, Loc loc) {
  const char* name = "logical_not";
  engine_for(name, a);
  if (a.dtype() != DType::b8) return eq(a, 0.0, loc);  // NaN is true, so its not is false
  return logical_xor(a, full(Shape{}, 1.0, {DType::b8, a.device()}, loc), loc);
}

Tensor add(const Tensor& a, double s, Loc loc) {
  return recorded(with_scalar<BinaryOp::add, false>("add", a, s, loc), Scalar::add, a, s, loc);
}
Tensor sub(const Tensor& a, double s, Loc loc) {
  return recorded(with_scalar<BinaryOp::sub, false>("sub", a, s, loc), Scalar::sub, a, s, loc);
}
Tensor rsub(const Tensor& a, double s, Loc loc) {
  return recorded(with_scalar<BinaryOp::sub, true>("rsub", a, s, loc), Scalar::rsub, a, s, loc);
}
Tensor mul(const Tensor& a, double s, Loc loc) {
  return recorded(with_scalar<BinaryOp::mul, false>("mul", a, s, loc), Scalar::mul, a, s, loc);
}
Tensor div(const Tensor& a, double s, Loc loc) {
  return recorded(with_scalar<BinaryOp::div, false>("div", a, s, loc), Scalar::div, a, s, loc);
}
Tensor rdiv(const Tensor& a, double s, Loc loc) {
  return recorded(with_scalar<BinaryOp::div, true>("rdiv", a, s, loc), Scalar::rdiv, a, s, loc);
}

Tensor pow(const Tensor& a, double s, Loc loc) {
  if (a.defined()) check_floating("pow", a.dtype());
  return recorded(with_scalar<BinaryOp::pow, false>("pow", a, s, loc), Scalar::pow, a, s, loc);
}
Tensor rpow(const Tensor& a, double s, Loc loc) {
  if (a.defined()) check_floating("rpow", a.dtype());
  return recorded(with_scalar<BinaryOp::pow, true>("rpow", a, s, loc), Scalar::rpow, a, s, loc);
}

Tensor neg(const Tensor& a, Loc loc) { return recorded(unary<UnaryOp::neg>("neg", a, false, loc), Unary::neg, a, loc); }
Tensor exp(const Tensor& a, Loc loc) { return recorded(unary<UnaryOp::exp>("exp", a, true, loc), Unary::exp, a, loc); }
Tensor log(const Tensor& a, Loc loc) { return recorded(unary<UnaryOp::log>("log", a, true, loc), Unary::log, a, loc); }
Tensor relu(const Tensor& a, Loc loc) {
  return recorded(unary<UnaryOp::relu>("relu", a, false, loc), Unary::relu, a, loc);
}
Tensor sqrt(const Tensor& a, Loc loc) {
  return recorded(unary<UnaryOp::sqrt>("sqrt", a, true, loc), Unary::sqrt, a, loc);
}
Tensor tanh(const Tensor& a, Loc loc) {
  return recorded(unary<UnaryOp::tanh>("tanh", a, true, loc), Unary::tanh, a, loc);
}
Tensor sigmoid(const Tensor& a, Loc loc) {
  return recorded(unary<UnaryOp::sigmoid>("sigmoid", a, true, loc), Unary::sigmoid, a, loc);
}
Tensor abs(const Tensor& a, Loc loc) { return recorded(unary<UnaryOp::abs>("abs", a, false, loc), Unary::abs, a, loc); }

void add_(Tensor& a, const Tensor& b, Loc loc) {
  binary_in_place<BinaryOp::add>("add_", a, b, loc);
}
void sub_(Tensor& a, const Tensor& b, Loc loc) {
  binary_in_place<BinaryOp::sub>("sub_", a, b, loc);
}
void mul_(Tensor& a, const Tensor& b, Loc loc) {
  binary_in_place<BinaryOp::mul>("mul_", a, b, loc);
}
void add_(Tensor& a, double s, Loc loc) {
  check_in_place("add_", a);
  with_scalar<BinaryOp::add, false, true>("add_", a, s, loc);
}
void mul_(Tensor& a, double s, Loc loc) {
  check_in_place("mul_", a);
  with_scalar<BinaryOp::mul, false, true>("mul_", a, s, loc);
}
void div_(Tensor& a, const Tensor& b, Loc loc) {
  binary_in_place<BinaryOp::div>("div_", a, b, loc);
}
void div_(Tensor& a, double s, Loc loc) {
  check_in_place("div_", a);
  with_scalar<BinaryOp::div, false, true>("div_", a, s, loc);
}

void copy_(Tensor& dst, const Tensor& src, Loc loc) {
  const char* name = "copy_";
  Engine& e = engine_of(name, dst, "dst");
  engine_of(name, src, "src");
  check_in_place(name, dst, &src);
  check_same_dtype(name, dst, src);
  check_same_shape(name, dst, src);
  if (overlaps_partly(dst, src)) [[unlikely]] {
    copy_(dst, copy_to(src, src.device(), loc), loc);
    return;
  }
  const std::size_t nbytes = dst.nbytes();
  const Device to = dst.device(), from = src.device();
  // copy_bytes moves within a device with memmove semantics: copy_(t, t) is
  // legal and its source and destination coincide.
  push_into(
      e, name, copy_device(to, from), {src.storage()}, {dst.storage()},
      [nbytes, to, from](const OpContext& ctx) { copy_bytes(ctx, to, ctx.out<char>(0), from, ctx.in<char>(0), nbytes); },
      loc, true);
}

Tensor to_dtype(const Tensor& a, DType dtype, Loc loc) {
  const char* name = "to_dtype";
  Engine& e = engine_of(name, a, "a");
  (void)tensor_bytes(Shape{}, dtype);  // DTypeError for a value that is no DType
  if (a.dtype() == dtype) return a;
  const Device dev = a.device();
  const auto fn = kernel_for(name, dev, kernels::elementwise(dev).cast);
  const std::int64_t n = a.numel();
  const DType from = a.dtype();
  Tensor out = push_new(
      e, name, a.shape(), dtype, dev, {a.storage()},
      [fn, from, dtype, n](const OpContext& ctx) { fn(from, dtype, ctx.in<void>(0), ctx.out<void>(0), n, ctx.native_stream); },
      loc, -1, true);
  if (is_floating(dtype) && wants(a)) autograd::record_to_dtype(out, a, loc);
  return out;
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
  op.launch_only = true;  // a device-to-host copy waits for its own stream only
  op.fn = [nbytes, device, from](const OpContext& ctx) {
    copy_bytes(ctx, device, ctx.out<char>(0), from, ctx.in<char>(0), nbytes);
  };
  op.reads.add(src.storage());
  op.writes.add(out.storage());
  op.loc = loc;
  e.push(std::move(op));
  if (wants(src)) autograd::record_copy_to(out, src, loc);
  return out;
}

}  // namespace tide
