// What a tensor carries for automatic differentiation, and the grad mode.
// The graph itself (nodes, their backward formulas and backward()) belongs
// to the ops layer, <tide/ops/autograd.h>; the core only holds a tensor's
// link into it, so that a Tensor handle stays one type for both.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <tide/core/tensor.h>

namespace tide {

namespace autograd {
class Node;
}

/// Shared by every copy of a Tensor handle made after it is set (a copy
/// made before keeps none). A leaf has no grad_fn; a tensor made by a
/// recorded op has the node that computes its inputs' gradients.
struct AutogradMeta {
  bool requires_grad = false;
  /// The accumulated gradient of a leaf (undefined until a backward reaches it).
  Tensor grad;
  /// The op that made this tensor; null for a leaf.
  std::shared_ptr<autograd::Node> grad_fn;
  /// A leaf's accumulator node, made by the first op that uses the leaf
  /// while recording; weak, so the leaf keeps no graph alive.
  std::weak_ptr<autograd::Node> accumulator;
  /// Called, in order, after a backward has accumulated all of its
  /// contributions to this leaf's gradient (the gradient as argument).
  std::vector<std::function<void(const Tensor&)>> post_accumulate_hooks;
};

/// Whether ops record the graph on this thread (on by default). Ops on
/// tensors that require gradients record a node only while it is on.
class GradMode {
 public:
  static bool enabled() { return enabled_; }
  static void set_enabled(bool on) { enabled_ = on; }

 private:
  static thread_local bool enabled_;
};

/// Turns recording off (or on) for its lifetime on this thread, then puts
/// back what was there: torch.no_grad() and torch.enable_grad().
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : prev_(GradMode::enabled()) { GradMode::set_enabled(enabled); }
  ~GradModeGuard() { GradMode::set_enabled(prev_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool prev_;
};

struct NoGradGuard : GradModeGuard {
  NoGradGuard() : GradModeGuard(false) {}
};

}  // namespace tide
