// What the ops call to record themselves for autograd. Each op checks
// `wants` (a pointer test, then the thread's grad mode) after it has pushed
// its kernel, so an op on tensors that need no gradient pays one branch.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include <tide/core/autograd.h>
#include <tide/core/loc.h>
#include <tide/core/tensor.h>

namespace tide::autograd {

inline bool needs(const Tensor& t) {
  const auto& m = t.autograd_meta();
  return m && m->requires_grad;
}
inline bool wants(const Tensor& a) { return needs(a) && GradMode::enabled(); }
inline bool wants(const Tensor& a, const Tensor& b) { return (needs(a) || needs(b)) && GradMode::enabled(); }
inline bool wants(const Tensor& a, const Tensor& b, const Tensor& c) {
  return (needs(a) || needs(b) || needs(c)) && GradMode::enabled();
}
inline bool wants(const std::vector<Tensor>& ts) {
  if (!GradMode::enabled()) return false;
  for (const Tensor& t : ts)
    if (needs(t)) return true;
  return false;
}

enum class Binary { add, sub, mul, div, pow, maximum, minimum };
enum class Scalar { add, sub, rsub, mul, div, rdiv, pow, rpow, maximum, minimum };
enum class Unary { neg, exp, log, relu, sqrt, tanh, sigmoid, abs };
enum class Reduce { sum, mean, max };

void record_binary(Binary op, Tensor& out, const Tensor& a, const Tensor& b, Loc loc);
void record_scalar(Scalar op, Tensor& out, const Tensor& a, double s, Loc loc);
void record_unary(Unary op, Tensor& out, const Tensor& a, Loc loc);
void record_copy_to(Tensor& out, const Tensor& src, Loc loc);
/// to_dtype between floating dtypes: the gradient converted back.
void record_to_dtype(Tensor& out, const Tensor& a, Loc loc);

void record_matmul(Tensor& out, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, Loc loc);
void record_linear(Tensor& out, const Tensor& x, const Tensor& w, const Tensor& b, Loc loc);
void record_softmax_cross_entropy(Tensor& loss, const Tensor& probs, const Tensor& logits, const Tensor& labels,
                                  Loc loc);

/// axis: normalized to [0, ndim), or none for a reduction over all elements.
void record_reduce(Reduce op, Tensor& out, const Tensor& a, std::optional<int> axis, Loc loc);

/// A view of a's elements in order (reshape, flatten, squeeze, unsqueeze).
void record_view(const char* name, Tensor& out, const Tensor& a);
/// strided(a, out.shape(), strides, offset).
void record_strided(Tensor& out, const Tensor& a, const std::vector<std::int64_t>& strides, std::int64_t offset,
                    Loc loc);

/// cat(inputs, axis): each input's gradient is its slice of the output's.
void record_cat(Tensor& out, const std::vector<Tensor>& inputs, int axis, Loc loc);

/// An op tide has no derivative for: its output carries a node whose
/// backward throws a tide::UsageError naming it, so a backward through it
/// fails clearly instead of dropping the gradient.
void record_not_differentiable(const char* name, Tensor& out, std::initializer_list<const Tensor*> inputs,
                               Loc loc);

/// In-place ops are not recorded: tide::UsageError when grad mode is on and
/// a tensor they write (or read into it) requires a gradient.
void refuse_in_place(const char* name, const Tensor& a, const Tensor* b = nullptr);

}  // namespace tide::autograd
