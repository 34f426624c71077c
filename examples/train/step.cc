// One training step, and the held-out evaluation after the last one.
#include <algorithm>
#include <limits>

#include "run.h"

namespace tide::train {

BackwardRange train_step(Run& run, std::int64_t step, Batch& batch) {
  run.comm.check_sync();  // ranks agree on the collectives so far (one small op, no blocker)
  Step minibatch = run.e.step();
  gather_rows(run.data.train, run.sampler.rows_for(step), batch.x, batch.y);
  Tensor x = run.to_dev(host_tensor(batch.x, Shape{run.cfg.batch, run.data.train.features}, run.cfg.dtype));
  Tensor y = run.to_dev(from_vector(batch.y));

  Model& model = run.model;
  Activations act = forward(model, x);
  auto [loss, probs] = softmax_cross_entropy(act.logits, y);
  add_(run.loss_sum, loss);
  add_(run.correct_sum, sum(eq(argmax(act.logits, 1), y)));

  // Backward, last layer first: each layer's parameter gradients go to
  // the reducer before its input gradient is computed, so a full bucket
  // starts reducing while the layers below still compute.
  GradientReducer& reducer = run.reducer;
  const std::uint64_t bwd_begin = run.e.pushed();
  Tensor d = softmax_cross_entropy_backward(probs, y);
  for (int l = model.layers() - 1; l >= 0; --l) {
    reducer.push_gradient(2 * l, linear_backward_weight(d, act.inputs[static_cast<std::size_t>(l)]));
    reducer.push_gradient(2 * l + 1, linear_backward_bias(d));
    if (l > 0) d = relu_backward(linear_backward_input(d, model.w(l)), act.pre[static_cast<std::size_t>(l) - 1]);
  }
  const BackwardRange backward{bwd_begin, run.e.pushed(), step};

  // The optimizer, bucket by bucket: each update waits only for its own
  // bucket's reduction.
  for (const auto& bucket : reducer.buckets())
    for (int i : bucket.params) {
      const auto ui = static_cast<std::size_t>(i);
      Tensor& p = model.params[ui];
      if (run.adam)
        adam_step_(p, reducer.reduced(i), run.state1[ui], run.state2[ui], step + 1, {.lr = run.cfg.lr});
      else
        sgd_step_(p, reducer.reduced(i), run.state1[ui], {.lr = run.cfg.lr, .momentum = run.cfg.momentum});
    }
  reducer.finish_step();
  return backward;
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
    Tensor logits =
        forward(run.model, run.to_dev(host_tensor(batch.x, Shape{r1 - r0, test.features}, run.cfg.dtype))).logits;
    add_(correct, sum(eq(argmax(logits, 1), run.to_dev(from_vector(batch.y)))));
  }
  const double test_correct = run.comm.all_reduce(correct, ReduceOp::sum).item<double>();
  return test_correct / static_cast<double>(test.rows);
}

}  // namespace tide::train
