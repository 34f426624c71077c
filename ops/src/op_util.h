// Helpers every op uses: argument checks that throw on the frontend, and
// the one place that allocates an output and hands the engine its closure.
// Order matters: an op runs every check before it allocates or pushes, so
// bad input leaves the engine untouched (invariant 4).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include <tide/core/engine.h>
#include <tide/core/tensor.h>
#include <tide/ops/creation.h>

namespace tide::detail {

inline std::string op_prefix(const char* op) { return std::string(op) + ": "; }

/// The engine of `t` (which must be the current one) after checking that
/// `t` is defined. `role` names the argument in messages ("a", "src").
inline Engine& engine_of(const char* op, const Tensor& t, const char* role) {
  if (!t.defined())
    throw UndefinedTensorError(op_prefix(op) + "argument '" + role + "' is an undefined tensor");
  return t.engine();  // UsageError when its engine is not the current one
}

inline void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  if (a.device() != b.device())
    throw DeviceError(op_prefix(op) + "tensors are on different devices (" + a.device().str() +
                      " and " + b.device().str() + "); move one first with copy_to(t, " +
                      a.device().str() + ")");
}

/// The engine of `a` and `b`: both defined, current, on one device.
inline Engine& engine_for(const char* op, const Tensor& a) { return engine_of(op, a, "a"); }
inline Engine& engine_for(const char* op, const Tensor& a, const Tensor& b) {
  Engine& e = engine_of(op, a, "a");
  engine_of(op, b, "b");  // one current engine, so both belong to `e`
  check_same_device(op, a, b);
  return e;
}

inline void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    throw DTypeError(op_prefix(op) + "dtypes differ (" + dtype_name(a.dtype()) + " and " +
                     dtype_name(b.dtype()) + "); tide does not promote types");
}

inline void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape())
    throw ShapeError(op_prefix(op) + "shapes differ (" + a.shape().str() + " and " +
                     b.shape().str() + ")");
}

inline void check_floating(const char* op, DType t) {
  if (!is_floating(t))
    throw DTypeError(op_prefix(op) + "needs a floating dtype (f32 or f64), got " + dtype_name(t));
}

/// A scalar must be representable in `t`: an integer operand is truncated
/// toward zero, and a value outside the dtype's range (or NaN) would be
/// undefined behaviour, so it is refused here.
inline void check_scalar_fits(const char* op, double s, DType t) {
  if (is_floating(t) || t == DType::b8) return;  // into bool: nonzero (NaN too) is true
  // The bounds are -2^31 and 2^31 (i64: -2^63 and 2^63), exact in a double;
  // the truncated value must lie in [lo, hi).
  // (-2^63 - 1 rounds to -2^63 in a double, so the test is on the
  // truncated value, which also refuses NaN.)
  const double lo = t == DType::i64 ? -9223372036854775808.0 : -2147483648.0;
  if (!(std::trunc(s) >= lo && s < -lo))
    throw ValueError(op_prefix(op) + "scalar " + std::to_string(s) + " does not fit the tensor's dtype " +
                     dtype_name(t));
}

/// True when b's bytes overlap a's without coinciding with them (views of
/// one block at different places). An op writing a in place while reading b
/// would then read elements it has already written, so it reads a copy of
/// b instead (numpy does the same).
inline bool overlaps_partly(const Tensor& a, const Tensor& b) {
  const Storage* sa = a.storage().get();
  const Storage* sb = b.storage().get();
  if (sa == sb || sa->owner() != sb->owner()) return false;
  const std::size_t oa = sa->offset(), ob = sb->offset(), ea = oa + a.nbytes(), eb = ob + b.nbytes();
  return oa < eb && ob < ea && (oa != ob || ea != eb);
}

/// `axis` in [-ndim, ndim), returned in [0, ndim).
inline int normalize_axis(const char* op, const Tensor& a, int axis) {
  const int nd = a.ndim();
  if (axis < -nd || axis >= nd)
    throw ShapeError(op_prefix(op) + "axis " + std::to_string(axis) + " is out of range for shape " +
                     a.shape().str() + " (valid: " + std::to_string(-nd) + " to " +
                     std::to_string(nd - 1) + ")");
  return axis < 0 ? axis + nd : axis;
}

/// Pushes `kernel`, which reads `reads` and writes only `out`, a tensor
/// just allocated (on the op's device). Call after every check.
/// `memory_bound`: see OpDesc::memory_bound.
template <typename Kernel>
Tensor push_to(Engine& e, const char* name, Tensor out, StorageList reads, Kernel&& kernel, Loc loc,
               int stream = -1, bool memory_bound = false) {
  OpDesc op;
  op.name = name;
  op.memory_bound = memory_bound;
  op.launch_only = true;
  op.device = out.device();
  op.stream = stream;
  op.fn = std::forward<Kernel>(kernel);
  op.reads = std::move(reads);
  op.writes.add(out.storage());
  op.loc = loc;
  e.push(std::move(op));
  return out;
}

/// Allocates the output (shape, dtype, device) and pushes `kernel` as push_to.
template <typename Kernel>
Tensor push_new(Engine& e, const char* name, const Shape& shape, DType dtype, Device device,
                StorageList reads, Kernel&& kernel, Loc loc, int stream = -1, bool memory_bound = false) {
  return push_to(e, name, Tensor::empty(shape, dtype, device), std::move(reads), std::forward<Kernel>(kernel),
                 loc, stream, memory_bound);
}

/// Pushes `kernel` that writes existing storages (in-place ops, copy_).
template <typename Kernel>
void push_into(Engine& e, const char* name, Device device, StorageList reads, StorageList writes,
               Kernel&& kernel, Loc loc, bool memory_bound = false) {
  OpDesc op;
  op.name = name;
  op.memory_bound = memory_bound;
  op.launch_only = true;
  op.device = device;
  op.fn = std::forward<Kernel>(kernel);
  op.reads = std::move(reads);
  op.writes = std::move(writes);
  op.loc = loc;
  e.push(std::move(op));
}

}  // namespace tide::detail
