// The autograd graph: a node per recorded op, holding what its backward
// needs and an edge to each input's producer (or to a leaf's accumulator).
// Built on the frontend thread by the ops as they are pushed; run by
// backward() (graph.cc), which pushes the backward ops through the same
// engine, asynchronously, like any others.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <tide/core/autograd.h>
#include <tide/core/loc.h>
#include <tide/core/tensor.h>

namespace tide::autograd {

class Node;

/// Where an input's gradient goes: the node that made the input, the
/// accumulator of a leaf, or nothing (an input that needs no gradient).
struct Edge {
  std::shared_ptr<Node> node;
};

/// A tensor kept for a backward, without its own graph link (a node that
/// kept its output's link would keep itself alive). Remembers the storage's
/// write count, so a backward that would read values changed since the
/// forward fails instead of giving a wrong gradient.
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t);
  /// The tensor; tide::UsageError when its storage was written since it was saved.
  Tensor get(const Node& owner) const;
  /// The same check without the tensor (nothing when none was saved).
  void check(const Node& owner) const;

 private:
  Tensor t_;
  std::uint64_t version_ = 0;
};

class Node {
 public:
  Node(const char* name, Loc loc);
  /// Frees the nodes only this one holds without recursion: a graph of a
  /// million chained ops must not overflow the stack when it is dropped.
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const char* name() const { return name_; }
  /// The forward op's call site, for messages.
  Loc loc() const { return loc_; }
  /// Creation order: backward runs the ready node made last first, so the
  /// gradients of the last layers come first (and their reductions start first).
  std::uint64_t seq() const { return seq_; }
  /// "'mul' (called at file:line)".
  std::string describe() const;

  /// One per input of the forward op, in its order.
  std::vector<Edge> next;
  bool needs_grad(std::size_t input) const { return input < next.size() && next[input].node != nullptr; }

  /// The gradients of the inputs given the output's (entries for inputs
  /// that need none may be undefined). Pushes ops; called with grad mode off.
  virtual std::vector<Tensor> apply(const Tensor& grad, Loc loc) = 0;
  /// apply() for an output gradient of exactly 1 (backward(loss) of a
  /// one-element loss), where the node has a cheaper form for it.
  virtual bool has_unit_form() const { return false; }
  virtual std::vector<Tensor> apply_unit(Loc) { return {}; }
  /// Drops what the backward needs (the graph is freed after a backward
  /// unless it is retained); apply then throws.
  virtual void release() = 0;
  virtual bool released() const = 0;
  /// tide::UsageError when a saved tensor was written in place since: the
  /// backward checks every node before it pushes anything.
  virtual void check_saved() const {}
  /// The accumulator of a leaf, or null.
  virtual AutogradMeta* leaf() { return nullptr; }

 private:
  const char* name_;
  Loc loc_;
  std::uint64_t seq_;
};

/// A node whose backward is a closure over what it saved.
class FnNode final : public Node {
 public:
  using Backward = std::function<std::vector<Tensor>(const Tensor& grad, const Node& self, Loc loc)>;
  FnNode(const char* name, Loc loc, Backward fn, std::vector<SavedTensor> saved)
      : Node(name, loc), fn_(std::move(fn)), saved_(std::move(saved)) {}
  std::vector<Tensor> apply(const Tensor& grad, Loc loc) override { return fn_(grad, *this, loc); }
  /// The backward for an output gradient of 1, called with an undefined grad.
  void set_unit_form(Backward fn) { unit_ = std::move(fn); }
  bool has_unit_form() const override { return static_cast<bool>(unit_); }
  std::vector<Tensor> apply_unit(Loc loc) override { return unit_(Tensor(), *this, loc); }
  void release() override {
    fn_ = nullptr;
    unit_ = nullptr;
    saved_.clear();
  }
  bool released() const override { return !fn_; }
  void check_saved() const override {
    for (const SavedTensor& t : saved_) t.check(*this);
  }

 private:
  Backward fn_, unit_;
  std::vector<SavedTensor> saved_;  // copies of what fn_ captured, for check_saved
};

/// Adds the gradients reaching a leaf into its .grad, then runs its hooks.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<AutogradMeta> leaf);
  std::vector<Tensor> apply(const Tensor&, Loc) override { return {}; }  // graph.cc accumulates
  void release() override {}
  bool released() const override { return false; }
  AutogradMeta* leaf() override { return leaf_.get(); }

 private:
  std::shared_ptr<AutogradMeta> leaf_;
};

/// The edge for input `t`: null when it needs no gradient.
Edge edge_of(const Tensor& t);

/// Makes `out` the result of `node` (out is a tensor the op just made).
void attach(Tensor& out, std::shared_ptr<Node> node);

/// Records `backward` as the op that made `out` from `inputs`; `saved`
/// lists the tensors its closure saved, for the check before a backward.
/// Returns the node (to give it a unit form).
template <typename Inputs>
FnNode& record_from(const char* name, Loc loc, Tensor& out, const Inputs& inputs, FnNode::Backward backward,
                    std::initializer_list<SavedTensor> saved) {
  auto node = std::make_shared<FnNode>(name, loc, std::move(backward), std::vector<SavedTensor>(saved));
  node->next.reserve(inputs.size());
  for (const Tensor* t : inputs) node->next.push_back(edge_of(*t));
  FnNode& n = *node;
  attach(out, std::move(node));
  return n;
}
inline FnNode& record(const char* name, Loc loc, Tensor& out, std::initializer_list<const Tensor*> inputs,
                      FnNode::Backward backward, std::initializer_list<SavedTensor> saved = {}) {
  return record_from(name, loc, out, inputs, std::move(backward), saved);
}
/// The same for a list of inputs known only at run time (cat).
inline FnNode& record(const char* name, Loc loc, Tensor& out, const std::vector<const Tensor*>& inputs,
                      FnNode::Backward backward) {
  return record_from(name, loc, out, inputs, std::move(backward), {});
}

}  // namespace tide::autograd
