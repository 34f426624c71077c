// Elementwise ops. Tensor operands must have the same dtype and device
// (to_dtype converts);
// their shapes broadcast as numpy's do (aligned at the last axis, an axis of
// extent 1 or a missing one stretching to the other's: [64, 10] + [10] adds
// a row to every row), and an in-place op's b must broadcast to a's own
// shape. Shapes that cannot broadcast are a tide::ShapeError. A scalar operand is converted to the
// tensor's dtype (for i32 and i64, truncated toward zero; a scalar outside
// the dtype's range is a ValueError; a double holds every integer only up
// to 2^53). Integer arithmetic (i32, i64) wraps around on overflow and
// integer division truncates; on a CPU device, dividing by a zero element
// (or the dtype's minimum by -1) fails on the backend (surfacing at the next
// barrier), as any kernel error does. A CUDA kernel cannot fail that way
// without the host waiting for it, so there x / 0 gives 0 and MIN / -1 wraps
// to MIN. A scalar divisor that truncates to 0 in an integer dtype is
// refused at once (ValueError) on every device.
#pragma once

#include <optional>

#include <tide/ops/creation.h>

namespace tide {

/// The shape a op b has (numpy's broadcasting); tide::ShapeError when a and
/// b do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b);

Tensor add(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor sub(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor mul(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor div(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
/// A bool tensor (b8): true where a == b; NaN equals nothing. Accuracy is
/// sum(eq(argmax(logits, 1), labels)), an i64 count (argmax:
/// <tide/ops/nn.h>). A bool operand beside a number tensor, here and in the
/// arithmetic ops, is taken as that tensor's dtype (true is 1); two bool
/// tensors compare as i32, and arithmetic on them is refused.
Tensor eq(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
/// The other comparisons, likewise bool: true where a != b (NaN differs
/// from everything), a > b, a >= b, a < b, a <= b (false for NaN). Like eq,
/// their results need no gradient.
Tensor ne(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor gt(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor ge(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor lt(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor le(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
/// The larger (smaller) of a and b, elementwise; NaN in either gives NaN.
/// Their gradient goes to the input that won, half to each on a tie.
Tensor maximum(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor minimum(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
/// a where cond is not 0, else b (NaN counts as not 0, as in numpy), all
/// three broadcast together (numpy's rules); a and b of one dtype, cond of
/// any (a comparison's bool result, say). Differentiable in a and b: each
/// gets the gradient where it was taken, 0 elsewhere. A scalar a or b is
/// converted to the other's dtype, as the scalar forms below are.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor where(const Tensor& cond, const Tensor& a, double b, Loc loc = Loc::current());
Tensor where(const Tensor& cond, double a, const Tensor& b, Loc loc = Loc::current());
/// a to the power b, floating dtypes (the C library's pow: a negative base
/// to a fractional power is NaN).
Tensor pow(const Tensor& a, const Tensor& b, Loc loc = Loc::current());

Tensor add(const Tensor& a, double s, Loc loc = Loc::current());
Tensor sub(const Tensor& a, double s, Loc loc = Loc::current());  // a - s
Tensor rsub(const Tensor& a, double s, Loc loc = Loc::current()); // s - a
Tensor mul(const Tensor& a, double s, Loc loc = Loc::current());
Tensor div(const Tensor& a, double s, Loc loc = Loc::current());  // a / s
Tensor rdiv(const Tensor& a, double s, Loc loc = Loc::current()); // s / a
Tensor pow(const Tensor& a, double s, Loc loc = Loc::current());  // a ** s, floating dtypes
Tensor rpow(const Tensor& a, double s, Loc loc = Loc::current()); // s ** a, floating dtypes
/// The larger (smaller) of a and s; the gradient reaches a where a >= s
/// (a <= s), ties included, as torch.clamp's.
Tensor maximum(const Tensor& a, double s, Loc loc = Loc::current());
Tensor minimum(const Tensor& a, double s, Loc loc = Loc::current());
/// a limited to [lo, hi] (either may be left out, not both; lo <= hi):
/// minimum(maximum(a, lo), hi).
Tensor clamp(const Tensor& a, std::optional<double> lo, std::optional<double> hi, Loc loc = Loc::current());
/// Comparisons with a scalar (converted to a's dtype as above), bool
/// results. A bool tensor with a number is taken as f32 in arithmetic.
Tensor eq(const Tensor& a, double s, Loc loc = Loc::current());
Tensor ne(const Tensor& a, double s, Loc loc = Loc::current());
Tensor gt(const Tensor& a, double s, Loc loc = Loc::current());
Tensor ge(const Tensor& a, double s, Loc loc = Loc::current());
Tensor lt(const Tensor& a, double s, Loc loc = Loc::current());
Tensor le(const Tensor& a, double s, Loc loc = Loc::current());

/// Logical and, or, xor and not of any dtypes (nonzero, NaN too, is true),
/// broadcast; bool results, no gradient. In Python &, |, ^ and ~ of bool
/// tensors.
Tensor logical_and(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor logical_or(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor logical_xor(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor logical_not(const Tensor& a, Loc loc = Loc::current());

Tensor neg(const Tensor& a, Loc loc = Loc::current());
Tensor exp(const Tensor& a, Loc loc = Loc::current());  // floating dtypes
Tensor log(const Tensor& a, Loc loc = Loc::current());  // floating dtypes
Tensor relu(const Tensor& a, Loc loc = Loc::current());
Tensor sqrt(const Tensor& a, Loc loc = Loc::current());     // floating dtypes
Tensor tanh(const Tensor& a, Loc loc = Loc::current());     // floating dtypes
/// 1 / (1 + exp(-a)), floating dtypes.
Tensor sigmoid(const Tensor& a, Loc loc = Loc::current());
/// |a|; for the integer dtypes the minimum stays itself (it wraps).
Tensor abs(const Tensor& a, Loc loc = Loc::current());

/// In place: a op= b. These write an existing storage, so they order after
/// every earlier reader and writer of `a` (WAR, WAW).
void add_(Tensor& a, const Tensor& b, Loc loc = Loc::current());
void sub_(Tensor& a, const Tensor& b, Loc loc = Loc::current());
void mul_(Tensor& a, const Tensor& b, Loc loc = Loc::current());
void add_(Tensor& a, double s, Loc loc = Loc::current());
void mul_(Tensor& a, double s, Loc loc = Loc::current());
/// a /= b and a /= s (an integer division by a scalar zero refused at the call).
void div_(Tensor& a, const Tensor& b, Loc loc = Loc::current());
void div_(Tensor& a, double s, Loc loc = Loc::current());
/// a's values as `dtype`, one op (a itself when it already has that dtype).
/// Into an integer dtype a floating value truncates toward zero, NaN gives
/// 0, and a value beyond the dtype's range saturates to its bound (an i64
/// too wide for i32 as well): the same on every device. Differentiable
/// between the floating dtypes; a result in an integer dtype needs no gradient.
Tensor to_dtype(const Tensor& a, DType dtype, Loc loc = Loc::current());

/// dst = src, elementwise; same shape and dtype, any devices of the engine.
void copy_(Tensor& dst, const Tensor& src, Loc loc = Loc::current());
/// A new tensor with src's values on `device` (an op on its copy stream).
Tensor copy_to(const Tensor& src, Device device, Loc loc = Loc::current());

/// A tensor operand that remembers where the expression was written, so the
/// operators below report the user's line, not this header's.
struct At {
  const Tensor& t;
  Loc loc;
  At(const Tensor& tensor, Loc l = Loc::current()) : t(tensor), loc(l) {}  // NOLINT: implicit
};

inline Tensor operator+(At a, const Tensor& b) { return add(a.t, b, a.loc); }
inline Tensor operator-(At a, const Tensor& b) { return sub(a.t, b, a.loc); }
inline Tensor operator*(At a, const Tensor& b) { return mul(a.t, b, a.loc); }
inline Tensor operator/(At a, const Tensor& b) { return div(a.t, b, a.loc); }
inline Tensor operator+(At a, double s) { return add(a.t, s, a.loc); }
inline Tensor operator-(At a, double s) { return sub(a.t, s, a.loc); }
inline Tensor operator*(At a, double s) { return mul(a.t, s, a.loc); }
inline Tensor operator/(At a, double s) { return div(a.t, s, a.loc); }
inline Tensor operator+(double s, At a) { return add(a.t, s, a.loc); }
inline Tensor operator-(double s, At a) { return rsub(a.t, s, a.loc); }
inline Tensor operator*(double s, At a) { return mul(a.t, s, a.loc); }
inline Tensor operator/(double s, At a) { return rdiv(a.t, s, a.loc); }
inline Tensor operator-(At a) { return neg(a.t, a.loc); }
inline Tensor& operator+=(Tensor& a, const Tensor& b) { add_(a, b); return a; }
inline Tensor& operator-=(Tensor& a, const Tensor& b) { sub_(a, b); return a; }
inline Tensor& operator*=(Tensor& a, const Tensor& b) { mul_(a, b); return a; }
inline Tensor& operator+=(Tensor& a, double s) { add_(a, s); return a; }
inline Tensor& operator*=(Tensor& a, double s) { mul_(a, s); return a; }

}  // namespace tide
