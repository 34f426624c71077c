// The frontend checks of the nn and optimizer ops (ops/src/nn.cc, optim.cc): arguments named in
// messages, extents, dtypes and optimizer options. Each throws before
// anything is allocated or pushed.
#pragma once

#include <cmath>
#include <initializer_list>
#include <sstream>
#include <string>

#include "op_util.h"
#include "views_internal.h"

namespace tide::detail {

/// A tensor argument and the name that messages give it.
struct Arg {
  const Tensor& t;
  const char* role;
};

inline std::string quoted(const char* role) { return std::string("'") + role + "'"; }

/// The engine of `args`: each defined and of the current engine, all on the
/// first one's device.
inline Engine& engine_for_args(const char* op, std::initializer_list<Arg> args) {
  Engine* e = nullptr;
  for (const Arg& a : args) {
    Engine& ea = engine_of(op, a.t, a.role);
    if (!e) e = &ea;
  }
  const Arg& first = *args.begin();
  for (const Arg& a : args)
    if (a.t.device() != first.t.device())
      throw DeviceError(op_prefix(op) + quoted(a.role) + " is on " + a.t.device().str() + " but " +
                        quoted(first.role) + " is on " + first.t.device().str() +
                        "; move one first with copy_to(t, " + first.t.device().str() + ")");
  return *e;
}

inline void check_ndim(const char* op, const Arg& a, int ndim, const char* layout) {
  if (a.t.ndim() != ndim)
    throw ShapeError(op_prefix(op) + quoted(a.role) + " must be " + std::to_string(ndim) + "-D " +
                     layout + ", got shape " + a.t.shape().str());
}

inline void check_floating_arg(const char* op, const Arg& a) {
  if (!is_floating(a.t.dtype()))
    throw DTypeError(op_prefix(op) + quoted(a.role) + " needs a floating dtype (f32 or f64), got " +
                     dtype_name(a.t.dtype()));
}

/// Both floating and of one dtype.
inline void check_floating_pair(const char* op, const Arg& a, const Arg& b) {
  check_floating_arg(op, a);
  if (a.t.dtype() != b.t.dtype())
    throw DTypeError(op_prefix(op) + "dtypes differ (" + quoted(a.role) + " is " +
                     dtype_name(a.t.dtype()) + ", " + quoted(b.role) + " is " +
                     dtype_name(b.t.dtype()) + "); tide does not promote types");
}

/// Extent `dim_a` of a must equal extent `dim_b` of b (`what` names it).
inline void check_extent(const char* op, const Arg& a, int dim_a, const Arg& b, int dim_b, const char* what) {
  if (a.t.shape()[dim_a] != b.t.shape()[dim_b])
    throw ShapeError(op_prefix(op) + quoted(a.role) + " " + a.t.shape().str() + " and " +
                     quoted(b.role) + " " + b.t.shape().str() + " disagree on " + what + " (" +
                     std::to_string(a.t.shape()[dim_a]) + " vs " +
                     std::to_string(b.t.shape()[dim_b]) + ")");
}

/// logits or probs [N, C] (floating, N >= 1, C >= 1) and labels i32 or i64 [N].
inline void check_classification(const char* op, const Arg& scores, const Tensor& labels) {
  const Arg lab{labels, "labels"};
  check_ndim(op, scores, 2, "[N, C]");
  check_floating_arg(op, scores);
  if (scores.t.shape()[0] == 0 || scores.t.shape()[1] == 0)
    throw ShapeError(op_prefix(op) + "needs at least one row and one class, got " +
                     quoted(scores.role) + " of shape " + scores.t.shape().str());
  if (labels.dtype() != DType::i32 && labels.dtype() != DType::i64)
    throw DTypeError(op_prefix(op) + "labels must be i32 or i64 class indices, got " +
                     dtype_name(labels.dtype()));
  check_ndim(op, lab, 1, "[N]");
  check_extent(op, scores, 0, lab, 0, "N, the number of rows");
  // Labels reach the kernels as i32 (an i64 one saturates): classes beyond
  // i32 could not be told from a saturated label.
  if (scores.t.shape()[1] > 2147483647)
    throw ShapeError(op_prefix(op) + "has " + std::to_string(scores.t.shape()[1]) +
                     " classes; labels are i32 on the backend, so at most 2^31 - 1");
}


/// A double as a person writes it (1e-08, 0.9), for messages.
inline std::string num(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

/// What an optimizer option may be; every option must also be finite.
enum class Range { non_negative, positive, unit_interval /* [0, 1) */ };

inline void check_option(const char* op, const char* name, double x, Range r) {
  const bool in_range = r == Range::positive ? x > 0.0
                        : r == Range::non_negative ? x >= 0.0
                                                   : x >= 0.0 && x < 1.0;
  if (!std::isfinite(x) || !in_range) {
    const char* want = r == Range::positive       ? "finite and > 0"
                       : r == Range::non_negative ? "finite and >= 0"
                                                  : "in [0, 1)";
    throw ValueError(op_prefix(op) + "option " + name + " must be " + want + ", got " + num(x));
  }
}

/// An optimizer tensor: floating, of param's shape and dtype.
inline void check_like_param(const char* op, const Arg& param, const Arg& a) {
  check_floating_pair(op, param, a);
  if (a.t.shape() != param.t.shape())
    throw ShapeError(op_prefix(op) + quoted(a.role) + " must have param's shape " +
                     param.t.shape().str() + ", got " + a.t.shape().str());
}

/// grad and the states like param, and no state sharing a storage with
/// param, grad or another state, a mirror counting as the elements of its
/// source it follows (grad may alias param: each element is read before it
/// is written).
inline void check_optimizer_tensors(const char* op, const Arg& param, const Arg& grad,
                             std::initializer_list<Arg> states) {
  check_floating_arg(op, param);
  check_like_param(op, param, grad);
  if (overlaps_partly(param.t, grad.t))
    throw ValueError(op_prefix(op) + "grad overlaps param in part (views of one tensor at different places); "
                     "give it a copy");
  for (const Arg& s : states) check_like_param(op, param, s);
  for (const Arg* s = states.begin(); s != states.end(); ++s) {
    for (const Arg* other : {&param, &grad}) {
      if (s->t.is_same(other->t))
        throw ValueError(op_prefix(op) + quoted(s->role) + " shares its storage with " +
                         quoted(other->role) + "; optimizer state needs tensors of its own");
      if (shares_memory(s->t, true, other->t, other == &param))
        throw ValueError(op_prefix(op) + quoted(s->role) + " shares elements with " + quoted(other->role) +
                         " through a mirror (as_strided); optimizer state needs tensors of its own");
    }
    for (const Arg* t = s + 1; t != states.end(); ++t) {
      if (s->t.is_same(t->t))
        throw ValueError(op_prefix(op) + quoted(s->role) + " and " + quoted(t->role) +
                         " share one storage; optimizer state needs tensors of its own");
      if (shares_memory(s->t, true, t->t, true))
        throw ValueError(op_prefix(op) + quoted(s->role) + " and " + quoted(t->role) +
                         " share elements through a mirror (as_strided); optimizer state needs tensors of "
                         "its own");
    }
  }
}

}  // namespace tide::detail
