// Optimizer steps: the frontend checks (nn_checks.h) and in-place pushes
// calling the device kind's optimizer table (kernels.h; the CPU loops in
// cpu/optim.cc, the CUDA kernels in cuda/optim.cu). The updated tensors are
// listed as reads as well as writes: a failed producer's poison then
// propagates into them instead of being cleared by this op's successful
// write.
#include <tide/ops/optim.h>

#include <algorithm>
#include <array>
#include <functional>
#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kernels.h"
#include "nn_checks.h"
#include "op_util.h"
#include "views_internal.h"

namespace tide {

using namespace detail;

namespace {

void check_sgd_options(const char* name, const SgdOptions& o) {
  check_option(name, "lr", o.lr, Range::non_negative);
  check_option(name, "momentum", o.momentum, Range::non_negative);
  check_option(name, "weight_decay", o.weight_decay, Range::non_negative);
}

/// Adam's options checked, and its scalars for step `step`.
kernels::AdamScalars adam_scalars(const char* name, std::int64_t step, const AdamOptions& o) {
  check_option(name, "lr", o.lr, Range::non_negative);
  check_option(name, "beta1", o.beta1, Range::unit_interval);
  check_option(name, "beta2", o.beta2, Range::unit_interval);
  check_option(name, "eps", o.eps, Range::positive);
  check_option(name, "weight_decay", o.weight_decay, Range::non_negative);
  if (step < 1)
    throw ValueError(op_prefix(name) + "step counts from 1, got " + std::to_string(step));
  // beta < 1 and step >= 1, so both corrections are > 0.
  const double steps = static_cast<double>(step);
  return {o.beta1, o.beta2, o.eps, o.weight_decay, o.lr / (1.0 - std::pow(o.beta1, steps)),
          std::sqrt(1.0 - std::pow(o.beta2, steps))};
}

}  // namespace

void sgd_step_(Tensor& param, const Tensor& grad, Tensor& velocity, const SgdOptions& options,
               Loc loc) {
  const char* name = "sgd_step_";
  const Arg ap{param, "param"}, ag{grad, "grad"}, av{velocity, "velocity"};
  Engine& e = engine_for_args(name, {ap, ag, av});
  check_optimizer_tensors(name, ap, ag, {av});
  check_sgd_options(name, options);
  const std::int64_t n = param.numel();
  const SgdOptions o = options;
  const auto fn = kernels::kernel_for(name, param.device(), kernels::optim(param.device()).sgd);
  const DType dt = param.dtype();
  push_into(
      e, name, param.device(), {param.storage(), grad.storage(), velocity.storage()},
      {param.storage(), velocity.storage()},
      [fn, dt, n, o](const OpContext& ctx) {
        fn(ctx.native_stream, dt, ctx.out<void>(0), ctx.in<void>(1), ctx.out<void>(1), n, o.lr, o.momentum,
           o.weight_decay);
      },
      loc);
}

void adam_step_(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, std::int64_t step,
                const AdamOptions& options, Loc loc) {
  const char* name = "adam_step_";
  const Arg ap{param, "param"}, ag{grad, "grad"}, am{m, "m"}, av{v, "v"};
  Engine& e = engine_for_args(name, {ap, ag, am, av});
  check_optimizer_tensors(name, ap, ag, {am, av});
  const kernels::AdamScalars sc = adam_scalars(name, step, options);
  const std::int64_t n = param.numel();
  const auto fn = kernels::kernel_for(name, param.device(), kernels::optim(param.device()).adam);
  const DType dt = param.dtype();
  push_into(
      e, name, param.device(), {param.storage(), grad.storage(), m.storage(), v.storage()},
      {param.storage(), m.storage(), v.storage()},
      [fn, dt, n, sc](const OpContext& ctx) {
        fn(ctx.native_stream, dt, ctx.out<void>(0), ctx.in<void>(1), ctx.out<void>(1), ctx.out<void>(2), n, sc);
      },
      loc);
}

// ---------------------------------------------------------------------------
// The multi-tensor forms.

namespace {

constexpr int kPerOp = kernels::OptimTensors::kMax;
// Adam lists 4 storages read per parameter (param, grad, m, v).
static_assert(kPerOp * 4 <= StorageList::kCapacity, "an op's lists cannot hold kPerOp parameters");

/// One entry of a multi-tensor step: its tensors (states: 1 for SGD, 2 for Adam).
struct Entry {
  Tensor* param;
  const Tensor* grad;
  Tensor* state[2];
};

/// The entries of the lists, each checked as the single-tensor step checks
/// it, and no written tensor overlapping another entry's.
std::vector<Entry> entries(const char* name, std::span<Tensor> params, std::span<const Tensor> grads,
                           std::initializer_list<std::span<Tensor>> states,
                           std::initializer_list<const char*> state_names) {
  const std::size_t count = params.size();
  auto length_error = [&](const char* what, std::size_t got) {
    return ValueError(op_prefix(name) + "one " + what + " per parameter: " + std::to_string(count) +
                      " params but " + std::to_string(got) + " " + what);
  };
  if (grads.size() != count) throw length_error("grads", grads.size());
  for (std::size_t s = 0; s < states.size(); ++s)
    if (states.begin()[s].size() != count) throw length_error(state_names.begin()[s], states.begin()[s].size());
  const int nstates = static_cast<int>(states.size());
  std::vector<Entry> out(count);
  for (std::size_t k = 0; k < count; ++k) {
    Entry& en = out[k];
    en.param = &params[k];
    en.grad = &grads[k];
    for (int s = 0; s < nstates; ++s) en.state[s] = &states.begin()[s][k];
    // Roles that name the entry: "params[3]", "velocities[3]".
    auto role = [k](const char* list) {
      std::string r(list);
      r.append(1, '[').append(std::to_string(k)).append(1, ']');
      return r;
    };
    const std::string rp = role("params"), rg = role("grads");
    std::string rs[2];
    for (int s = 0; s < nstates; ++s) rs[s] = role(state_names.begin()[s]);
    const Arg ap{*en.param, rp.c_str()}, ag{*en.grad, rg.c_str()};
    if (nstates == 1) {
      const Arg a0{*en.state[0], rs[0].c_str()};
      engine_for_args(name, {ap, ag, a0});
      check_optimizer_tensors(name, ap, ag, {a0});
    } else {
      const Arg a0{*en.state[0], rs[0].c_str()}, a1{*en.state[1], rs[1].c_str()};
      engine_for_args(name, {ap, ag, a0, a1});
      check_optimizer_tensors(name, ap, ag, {a0, a1});
    }
  }
  // No tensor an entry writes may share a byte with a tensor of another
  // entry, a mirror counting as the elements of its source it follows
  // (a parameter and its transpose from as_strided, say). Every tensor's
  // bytes, sorted by the block they lie in and then by where they start:
  // only runs within one block are compared, so a list of separate tensors
  // costs a sort. Where a mirror's bound meets another's bytes, their
  // elements are compared as the engine writes them (shares_memory).
  struct Bytes {
    const Storage* owner;
    std::size_t begin, end, entry;
    bool written, mirror;
    const Tensor* tensor;
  };
  std::vector<Bytes> bytes;
  bytes.reserve(count * static_cast<std::size_t>(2 + nstates));
  for (std::size_t k = 0; k < count; ++k) {
    auto add = [&](const Tensor& t, bool written) {
      const AliasSpan span = alias_span(t);
      bytes.push_back({span.block, span.begin, span.end, k, written, span.through_mirror, &t});
    };
    add(*out[k].param, true);
    add(*out[k].grad, false);
    for (int s = 0; s < nstates; ++s) add(*out[k].state[s], true);
  }
  std::sort(bytes.begin(), bytes.end(), [](const Bytes& a, const Bytes& b) {
    return a.owner != b.owner ? std::less<const Storage*>()(a.owner, b.owner) : a.begin < b.begin;
  });
  for (std::size_t i = 0; i < bytes.size(); ++i)
    for (std::size_t j = i + 1; j < bytes.size() && bytes[j].owner == bytes[i].owner; ++j) {
      const Bytes &a = bytes[i], &b = bytes[j];
      // Sorted by start: once b starts past a's end, so do the rest.
      if (b.begin >= a.end) break;
      const bool shared = a.begin < b.end && b.begin < a.end;
      if (shared && a.entry != b.entry && (a.written || b.written) &&
          (!(a.mirror || b.mirror) || shares_memory(*a.tensor, a.written, *b.tensor, b.written)))
        throw ValueError(op_prefix(name) + "entries " + std::to_string(std::min(a.entry, b.entry)) + " and " +
                         std::to_string(std::max(a.entry, b.entry)) +
                         " share memory that one of them writes (a parameter or state listed twice, "
                         "overlapping views, or a mirror of the other's elements); each entry needs tensors "
                         "of its own");
    }
  // A mirror is written back whole: an op that writes part of one and two
  // blocks of one tree of mirrors (the engine does not tell whose tree)
  // would lose a write, and the engine refuses it. Refused here, before
  // any op of the list is pushed, whichever ops the tensors fall in.
  const Bytes* part = nullptr;
  for (const Bytes& b : bytes)
    if (!part && b.written && writes_part_of_a_mirror(*b.tensor)) part = &b;
  const Bytes *one = nullptr, *two = nullptr;  // written, other blocks, one tree
  for (std::size_t i = 0; part && !two && i < bytes.size(); ++i) {
    const Bytes& b = bytes[i];
    if (!b.written) continue;
    for (std::size_t k = i + 1; !two && k < bytes.size() && bytes[k].owner == b.owner; ++k)
      if (bytes[k].written && bytes[k].tensor->storage()->owner() != b.tensor->storage()->owner())
        one = &b, two = &bytes[k];
  }
  if (two)
    throw ValueError(op_prefix(name) + "entry " + std::to_string(part->entry) +
                     " writes part of a mirror (a view of a column, a step or a transpose), and entries " +
                     std::to_string(std::min(one->entry, two->entry)) + " and " +
                     std::to_string(std::max(one->entry, two->entry)) +
                     " write two views of one tensor; a mirror is written back whole, so a write could be "
                     "lost. Step them in separate calls");
  return out;
}

/// The entries to push as one op each: grouped by device and dtype (in the
/// order each pair first appears, entries in list order), at most kPerOp
/// per op.
std::vector<std::vector<const Entry*>> ops_of(const std::vector<Entry>& all) {
  std::vector<std::vector<const Entry*>> groups;
  std::vector<std::vector<const Entry*>> open;  // the group being filled, per (device, dtype) seen
  std::vector<std::pair<Device, DType>> keys;
  for (const Entry& en : all) {
    const std::pair<Device, DType> key{en.param->device(), en.param->dtype()};
    std::size_t g = 0;
    while (g < keys.size() && keys[g] != key) ++g;
    if (g == keys.size()) {
      keys.push_back(key);
      open.emplace_back();
    }
    open[g].push_back(&en);
    if (static_cast<int>(open[g].size()) == kPerOp) groups.push_back(std::move(open[g])), open[g].clear();
  }
  for (auto& g : open)
    if (!g.empty()) groups.push_back(std::move(g));
  return groups;
}

/// Pushes one multi-tensor op over `group`: reads (param, grad, states) and
/// writes (param, states) per entry, in entry order; the kernel gets them as
/// OptimTensors. `run(fn, ctx, tensors)` calls the table's kernel.
template <typename Fn, typename Run>
void push_many(const char* name, const std::vector<const Entry*>& group, int nstates, Fn fn, Run run, Loc loc) {
  const Tensor& first = *group.front()->param;
  Engine& e = engine_of(name, first, "params");
  StorageList reads, writes;
  auto sizes = std::make_unique<std::array<std::int64_t, kPerOp>>();
  for (std::size_t k = 0; k < group.size(); ++k) {
    const Entry& en = *group[k];
    reads.add(en.param->storage());
    reads.add(en.grad->storage());
    writes.add(en.param->storage());
    for (int s = 0; s < nstates; ++s) {
      reads.add(en.state[s]->storage());
      writes.add(en.state[s]->storage());
    }
    (*sizes)[k] = en.param->numel();
  }
  const int count = static_cast<int>(group.size());
  const DType dt = first.dtype();
  const int per_read = 2 + nstates, per_write = 1 + nstates;
  push_into(
      e, name, first.device(), std::move(reads), std::move(writes),
      [fn, run, dt, count, per_read, per_write, sizes = std::move(sizes)](const OpContext& ctx) {
        kernels::OptimTensors t;
        t.count = count;
        for (int k = 0; k < count; ++k) {
          t.param[k] = ctx.out<void>(k * per_write);
          t.grad[k] = ctx.in<void>(k * per_read + 1);
          t.state1[k] = ctx.out<void>(k * per_write + 1);
          t.state2[k] = per_write > 2 ? ctx.out<void>(k * per_write + 2) : nullptr;
          t.n[k] = (*sizes)[static_cast<std::size_t>(k)];
        }
        run(fn, ctx.native_stream, dt, t);
      },
      loc);
}

}  // namespace

void sgd_step_(std::span<Tensor> params, std::span<const Tensor> grads, std::span<Tensor> velocities,
               const SgdOptions& options, Loc loc) {
  const char* name = "sgd_step_";
  const std::vector<Entry> all = entries(name, params, grads, {velocities}, {"velocities"});
  check_sgd_options(name, options);
  const SgdOptions o = options;
  for (const auto& group : ops_of(all)) {
    const Device d = group.front()->param->device();
    const auto fn = kernels::kernel_for(name, d, kernels::optim(d).sgd_many);
    push_many(
        name, group, 1, fn,
        [o](auto f, void* stream, DType dt, const kernels::OptimTensors& t) {
          f(stream, dt, t, o.lr, o.momentum, o.weight_decay);
        },
        loc);
  }
}

void adam_step_(std::span<Tensor> params, std::span<const Tensor> grads, std::span<Tensor> m, std::span<Tensor> v,
                std::int64_t step, const AdamOptions& options, Loc loc) {
  const char* name = "adam_step_";
  const std::vector<Entry> all = entries(name, params, grads, {m, v}, {"m", "v"});
  const kernels::AdamScalars sc = adam_scalars(name, step, options);
  for (const auto& group : ops_of(all)) {
    const Device d = group.front()->param->device();
    const auto fn = kernels::kernel_for(name, d, kernels::optim(d).adam_many);
    push_many(
        name, group, 2, fn,
        [sc](auto f, void* stream, DType dt, const kernels::OptimTensors& t) { f(stream, dt, t, sc); }, loc);
  }
}

}  // namespace tide
