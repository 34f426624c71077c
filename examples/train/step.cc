// One training step (its micro-batches, then the optimizer), and the
// held-out evaluation after the last one.
#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "run.h"

namespace tide::train {

namespace {

/// Forward and backward of one micro-batch of `rows`, its gradients handed
/// to the reducer; returns the push indices of its backward.
BackwardRange micro_batch(Run& run, std::int64_t step, const std::vector<std::int64_t>& rows, Batch& batch) {
  gather_rows(run.data.train, rows, batch.x, batch.y);
  Tensor x = run.to_dev(host_tensor(batch.x, Shape{run.cfg.batch, run.data.train.features}, run.cfg.dtype));
  Tensor y = run.to_dev(from_vector(batch.y));

  Activations act = forward(run.model, x);
  auto [loss, probs] = softmax_cross_entropy(act.logits, y);
  add_(run.loss_sum, loss.detach());
  // eq gives a bool mask; counted as i32, the dtype of the running sum.
  add_(run.correct_sum, sum(to_dtype(eq(argmax(act.logits, 1, DType::i32), y), DType::i32)));

  // Backward through autograd: the last layer's gradients come first, and
  // each parameter's hook (run.cc) hands it to the reducer as soon as it is
  // summed, before the layers below are pushed. The loss is a mean over the
  // micro-batch; over the step it is the mean of the micro-batches' means,
  // so each one's gradient counts 1/K (the reducer sums them).
  const std::uint64_t bwd_begin = run.e.pushed();
  const int k = run.cfg.accum_steps;
  backward(loss, k > 1 ? full(Shape{}, 1.0 / k, {run.cfg.dtype, run.dev}) : Tensor());
  return {bwd_begin, run.e.pushed(), step};
}

}  // namespace

BackwardRange train_step(Run& run, std::int64_t step, Batch& batch) {
  run.comm.check_sync();  // ranks agree on the collectives so far (one small op, no blocker)
  Step minibatch = run.e.step();  // an optimizer step: all its micro-batches
  const std::vector<std::int64_t> rows = run.sampler.rows_for(step);
  const int k_steps = run.cfg.accum_steps;
  GradientReducer& reducer = run.reducer;
  BackwardRange backward{};
  for (int k = 0; k < k_steps; ++k) {
    // Every micro-batch but the last accumulates its gradients locally; the
    // last one's backward reduces the sums, bucket by bucket.
    std::optional<GradientReducer::NoSync> local;
    if (k + 1 < k_steps) local.emplace(reducer);
    const auto first = rows.begin() + static_cast<std::ptrdiff_t>(k * run.cfg.batch);
    backward = micro_batch(run, step, std::vector<std::int64_t>(first, first + static_cast<std::ptrdiff_t>(run.cfg.batch)),
                           batch);
    if (k + 1 < k_steps) reducer.finish_step();
  }

  // The optimizer, bucket by bucket, each bucket's parameters in one op (on
  // a GPU, one launch): each update waits only for its own bucket's
  // reduction. The lists hold handles of the model's tensors, which the
  // steps update in place.
  Model& model = run.model;
  std::vector<Tensor> params, grads, state1, state2;
  for (const auto& bucket : reducer.buckets()) {
    params.clear(), grads.clear(), state1.clear(), state2.clear();
    for (int i : bucket.params) {
      const auto ui = static_cast<std::size_t>(i);
      params.push_back(model.params[ui]);
      grads.push_back(reducer.reduced(i));
      state1.push_back(run.state1[ui]);
      if (run.adam) state2.push_back(run.state2[ui]);
    }
    if (run.adam)
      adam_step_(params, grads, state1, state2, step + 1, {.lr = run.cfg.lr});
    else
      sgd_step_(params, grads, state1, {.lr = run.cfg.lr, .momentum = run.cfg.momentum});
  }
  reducer.finish_step();
  return backward;  // the last micro-batch's: the one that reduces
}

double test_accuracy(Run& run, Batch& batch) {
  const Dataset& test = run.data.test;
  // No held-out rows (on every rank alike): no accuracy, rather than 0%.
  if (test.rows == 0) return std::numeric_limits<double>::quiet_NaN();
  const std::int64_t lo = test.rows * run.rank / run.ranks, hi = test.rows * (run.rank + 1) / run.ranks;
  Tensor correct = zeros(Shape{}, {DType::i32, run.dev});
  constexpr std::int64_t kChunk = 1024;
  for (std::int64_t r0 = lo; r0 < hi; r0 += kChunk) {
    const std::int64_t r1 = std::min(hi, r0 + kChunk);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(r1 - r0));
    for (std::int64_t i = r0; i < r1; ++i) rows[static_cast<std::size_t>(i - r0)] = i;
    gather_rows(test, rows, batch.x, batch.y);
    NoGradGuard no_grad;  // evaluation records no graph
    Tensor logits =
        forward(run.model, run.to_dev(host_tensor(batch.x, Shape{r1 - r0, test.features}, run.cfg.dtype))).logits;
    add_(correct, sum(to_dtype(eq(argmax(logits, 1, DType::i32), run.to_dev(from_vector(batch.y))), DType::i32)));
  }
  const double test_correct = run.comm.all_reduce(correct, ReduceOp::sum).item<double>();
  return test_correct / static_cast<double>(test.rows);
}

}  // namespace tide::train
