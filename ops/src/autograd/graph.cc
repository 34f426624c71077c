// The graph's bookkeeping and backward(): a walk from the root that runs
// each node once all the gradients reaching it have been summed.
#include <tide/ops/autograd.h>

#include <atomic>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include <tide/core/error.h>
#include <tide/ops/creation.h>
#include <tide/ops/elementwise.h>

#include "node.h"
#include "record.h"

namespace tide {
namespace autograd {

namespace {
std::atomic<std::uint64_t> g_next_seq{0};
}

Node::Node(const char* name, Loc loc)
    : name_(name), loc_(loc), seq_(g_next_seq.fetch_add(1, std::memory_order_relaxed)) {}

std::string Node::describe() const { return std::string("'") + name_ + "' (called at " + format_call_site(loc_) + ")"; }

SavedTensor::SavedTensor(const Tensor& t) : t_(t.detach()), version_(t.storage()->var().version) {}

void SavedTensor::check(const Node& owner) const {
  if (t_.defined() && t_.storage()->var().version != version_)
    throw UsageError("backward: a tensor that " + owner.describe() +
                     " saved for its gradient has been written in place since; its backward would "
                     "read the new values. Write a copy instead, or run the in-place op after backward");
}

Tensor SavedTensor::get(const Node& owner) const {
  check(owner);
  return t_;
}

Node::~Node() {
  // Nodes that only this one holds would die inside its destructor, each
  // inside the last: take their edges first, and let them go one by one.
  std::vector<std::shared_ptr<Node>> dying;
  auto take = [&dying](std::vector<Edge>& edges) {
    for (Edge& e : edges)
      if (e.node && e.node.use_count() == 1) dying.push_back(std::move(e.node));
    edges.clear();
  };
  take(next);
  while (!dying.empty()) {
    std::shared_ptr<Node> n = std::move(dying.back());
    dying.pop_back();
    take(n->next);
  }
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<AutogradMeta> leaf)
    : Node("accumulate_grad", Loc()), leaf_(std::move(leaf)) {}

Edge edge_of(const Tensor& t) {
  const auto& m = t.autograd_meta();
  if (!m || !m->requires_grad) return {};
  if (m->grad_fn) return {m->grad_fn};
  std::shared_ptr<Node> acc = m->accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(m);
    m->accumulator = acc;
  }
  return {std::move(acc)};
}

void attach(Tensor& out, std::shared_ptr<Node> node) {
  auto m = std::make_shared<AutogradMeta>();
  m->requires_grad = true;
  m->grad_fn = std::move(node);
  out.set_autograd_meta(std::move(m));
}

void record_not_differentiable(const char* name, Tensor& out, std::initializer_list<const Tensor*> inputs,
                               Loc loc) {
  record(name, loc, out, inputs, [](const Tensor&, const Node& self, Loc) -> std::vector<Tensor> {
    throw UsageError("backward: tide has no derivative for " + self.describe() +
                     "; it is itself a backward op. Run it under NoGradGuard (tide.no_grad()), or build "
                     "the forward from differentiable ops and call backward()");
  });
}

void refuse_in_place(const char* name, const Tensor& a, const Tensor* b) {
  if (!GradMode::enabled()) return;
  const bool on_a = needs(a), on_b = b && needs(*b);
  if (!on_a && !on_b) return;
  throw UsageError(std::string(name) + ": an in-place op cannot be recorded for autograd, and " +
                   (on_a ? "the tensor it writes" : "its operand b") +
                   " requires a gradient. Use the out-of-place op, or run it with grad mode off "
                   "(NoGradGuard in C++, tide.no_grad() in Python) as an optimizer step does");
}

}  // namespace autograd

namespace {

using autograd::Node;

/// The order of ready nodes: the one made last first.
struct LaterFirst {
  bool operator()(const Node* a, const Node* b) const { return a->seq() < b->seq(); }
};

/// How many places hold each gradient block (a storage, or the owner that
/// views share) during a backward: a node's input buffer, each edge a node
/// passed it on to (views and sums pass their gradient through), and the
/// caller, for its own `grad`.
using Uses = std::unordered_map<const Storage*, int>;

/// A leaf's first gradient becomes its .grad without a copy only when
/// nothing else holds that storage; otherwise it is copied, so that a .grad
/// written in place (a hook's reduction does that) changes no other
/// gradient, no tensor the rest of the backward reads, and none of the caller's.
void accumulate(AutogradMeta& leaf, Tensor g, const Uses& uses, Loc loc) {
  if (leaf.grad.defined()) {
    leaf.grad = add(leaf.grad, g, loc);
  } else {
    const auto it = uses.find(g.storage()->owner());
    if (it != uses.end() && it->second > 1) g = copy_to(g, g.device(), loc);
    leaf.grad = g.detach();
  }
  // Copies: a hook may clear .grad (the reducer keeps the gradient) or add
  // another hook.
  const Tensor grad = leaf.grad;
  const auto hooks = leaf.post_accumulate_hooks;
  for (const auto& hook : hooks) hook(grad);
}

}  // namespace

void backward(const Tensor& root, const Tensor& grad, BackwardOptions options, Loc loc) {
  root.check_defined("backward");
  if (!root.requires_grad())
    throw UsageError("backward: the tensor does not require a gradient (no leaf it depends on was marked "
                     "with set_requires_grad / requires_grad=True, or it was made with grad mode off)");
  Tensor seed = grad;
  if (seed.defined()) {
    if (seed.shape() != root.shape() || seed.dtype() != root.dtype() || seed.device() != root.device())
      throw ShapeError("backward: grad must match the tensor (" + root.shape().str() + " " +
                       dtype_name(root.dtype()) + " on " + root.device().str() + "), got " + seed.shape().str() +
                       " " + dtype_name(seed.dtype()) + " on " + seed.device().str());
  } else if (root.numel() != 1) {
    throw ShapeError("backward: a gradient can be implied only for a tensor of one element; this one has shape " +
                     root.shape().str() + ", so pass grad");
  }
  NoGradGuard no_grad;
  const std::shared_ptr<Node> start = autograd::edge_of(root).node;

  // How many edges reach each node from the root: a node runs once all of
  // them have delivered (or skipped) their gradient.
  std::unordered_map<Node*, int> pending;
  {
    std::vector<Node*> stack{start.get()};
    pending[start.get()] = 0;
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      // A freed node, or one whose saved tensors changed, fails the
      // backward here, before anything is pushed.
      n->check_saved();
      if (n->released())
        throw UsageError("backward: the graph through " + n->describe() +
                         " was freed by an earlier backward; pass retain_graph (BackwardOptions in C++, "
                         "retain_graph=True in Python) to the first one to run backward through it twice");
      for (const auto& e : n->next) {
        if (!e.node) continue;
        auto [it, fresh] = pending.try_emplace(e.node.get(), 0);
        ++it->second;
        if (fresh) stack.push_back(e.node.get());
      }
    }
  }

  // An implied gradient of 1 into a node that has a form for it (a loss's)
  // costs no ones tensor and no multiply by it.
  const bool unit = !seed.defined() && start->has_unit_form();
  if (!seed.defined() && !unit) seed = ones(root.shape(), {root.dtype(), root.device()}, loc);
  std::unordered_map<Node*, Tensor> sums;
  Uses uses;
  if (!unit) {
    uses[seed.storage()->owner()] = grad.defined() ? 2 : 1;
    sums[start.get()] = seed;
  }
  std::priority_queue<Node*, std::vector<Node*>, LaterFirst> ready;
  ready.push(start.get());
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    Tensor g = std::move(sums[n]);
    sums.erase(n);
    if (AutogradMeta* leaf = n->leaf()) {
      if (g.defined()) accumulate(*leaf, std::move(g), uses, loc);
      continue;
    }
    std::vector<Tensor> grads;
    if (unit && n == start.get()) {
      grads = n->apply_unit(loc);
    } else if (g.defined()) {
      grads = n->apply(g, loc);
      // The node's ops have been pushed: a later in-place write of g is
      // ordered after them, so this buffer no longer counts as a holder.
      --uses[g.storage()->owner()];
    }
    if (!options.retain_graph) n->release();
    // Every gradient is placed before any accumulator runs: one that this
    // node also hands to another edge is then seen as shared, and copied.
    for (std::size_t i = 0; i < n->next.size() && i < grads.size(); ++i) {
      Node* to = n->next[i].node.get();
      if (!to || !grads[i].defined()) continue;
      Tensor& sum = sums[to];
      if (sum.defined()) {
        --uses[sum.storage()->owner()];
        sum = add(sum, grads[i], loc);
      } else {
        sum = std::move(grads[i]);
      }
      ++uses[sum.storage()->owner()];
    }
    for (std::size_t i = 0; i < n->next.size(); ++i) {
      Node* to = n->next[i].node.get();
      if (!to || --pending[to] != 0) continue;
      // A leaf's accumulator runs as soon as its last contribution is in
      // (its hooks start gradient reductions as early as they can), in the
      // order of the op's inputs.
      if (AutogradMeta* leaf = to->leaf()) {
        auto it = sums.find(to);
        if (it != sums.end()) {
          Tensor sum = std::move(it->second);
          sums.erase(it);
          if (sum.defined()) accumulate(*leaf, std::move(sum), uses, loc);
        }
      } else {
        ready.push(to);
      }
    }
  }
}

const char* grad_fn_name(const Tensor& t) {
  const auto& m = t.autograd_meta();
  return m && m->grad_fn ? m->grad_fn->name() : "";
}

void register_post_accumulate_grad_hook(const Tensor& t, std::function<void(const Tensor&)> hook) {
  t.check_defined("register_post_accumulate_grad_hook");
  if (!t.requires_grad() || !t.is_leaf())
    throw UsageError("register_post_accumulate_grad_hook: the tensor must be a leaf that requires a gradient");
  if (!hook) throw ValueError("register_post_accumulate_grad_hook: the hook is empty");
  t.autograd_meta()->post_accumulate_hooks.push_back(std::move(hook));
}

}  // namespace tide
