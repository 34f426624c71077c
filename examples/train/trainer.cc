// The training loop, top to bottom; each step of it lives in its own file
// (run.cc: set-up, run_checkpoint.cc: resume and checkpoints, step.cc: a
// training step and the evaluation, overlap.cc, report.cc).
#include "trainer.h"

#include <algorithm>
#include <cmath>

#include "checkpoint_checks.h"
#include "run.h"

namespace tide::train {

void TrainConfig::validate() const {
  auto bad = [](const std::string& what) { throw ValueError("train: " + what); };
  if (hidden.empty()) bad("give at least one hidden width");
  for (auto h : hidden)
    if (h < 1) bad("hidden widths must be >= 1, got " + std::to_string(h));
  if (batch < 1) bad("batch must be >= 1, got " + std::to_string(batch));
  if (accum_steps < 1) bad("accum_steps must be >= 1 (micro-batches per optimizer step), got " +
                           std::to_string(accum_steps));
  if (epochs < 0) bad("epochs must be >= 1 (or 0: as many as max_steps needs), got " + std::to_string(epochs));
  if (max_steps < 0) bad("max_steps must be >= 0");
  if (optimizer != "sgd" && optimizer != "adam") bad("optimizer must be 'sgd' or 'adam', got '" + optimizer + "'");
  if (!(lr >= 0) || !std::isfinite(lr)) bad("lr must be a finite number >= 0");
  if (!(momentum >= 0 && momentum < 1)) bad("momentum must be in [0, 1)");
  if (!(bucket_mb > 0)) bad("bucket size must be > 0 MiB");
  if (!(first_bucket_mb >= 0) || !std::isfinite(first_bucket_mb))
    bad("first bucket size must be >= 0 MiB (0: the bucket size)");
  if (lookahead < 0) bad("lookahead must be >= 0 (0: unbounded)");
  if (log_every < 1) bad("log interval must be >= 1");
  if (checkpoint_every < 0) bad("checkpoint interval must be >= 0");
  if (resume && checkpoint_dir.empty()) bad("resume needs a checkpoint directory");
  if (overwrite && checkpoint_dir.empty()) bad("overwrite needs a checkpoint directory");
  if (resume && overwrite) bad("resume continues the checkpoint and overwrite replaces it: give one, not both");
  if (dtype != DType::f32 && dtype != DType::f64) bad("dtype must be f32 or f64");
}

namespace {

/// Enough steps are traced for the overlap figures: stop recording (one
/// barrier, so that every traced step is complete).
void stop_tracing(Engine& e) {
  e.wait_all();
  e.set_tracing(false);
}

}  // namespace

TrainResult train(Communicator& comm, const Split& data, const TrainConfig& cfg, const Progress& progress) {
  Run run(comm, data, cfg, progress);                        // model, reducer, optimizer state, interval sums
  start_or_resume(run);                                      // rank 0's checkpoint, if any, on every rank
  EngineSettings settings(run.e, cfg.lookahead, run.own_trace);  // sync policy and tracing, given back at the end
  TrainResult res = start_result(run);
  const std::int64_t warm = std::min<std::int64_t>(10, (run.total - run.start) / 4);
  constexpr std::int64_t kTracedSteps = 200;  // after the warm-up
  run.measure_from = run.start + warm;
  run.measure_to = run.measure_from + kTracedSteps;
  // With --metrics every log line has its communication figures: the
  // trainer's own recording then runs to the end (read at each line).
  const bool stop_recording = run.own_trace && cfg.metrics_path.empty();
  Batch batch;
  double t_warm = now_s(), t_log = now_s();
  run.started_s = t_log;

  for (std::int64_t step = run.start; step < run.total; ++step) {
    if (step == run.start + warm) t_warm = now_s();
    if (stop_recording && step == run.measure_to) stop_tracing(run.e);
    run.meter.add(train_step(run, step, batch));
    if (log_due(run, step)) report_progress(run, step, res, t_log);  // the loop's only blockers
    if (checkpoint_due(run, step)) save_checkpoint(run, step);
  }
  run.e.wait_all();
  record_speed(run, warm, now_s() - t_warm, res);
  if (run.timeline) {
    read_timeline(run, run.total - 1);
    record_overlap(run.overall, res);
  }
  res.test_accuracy = test_accuracy(run, batch);
  for (const Tensor& p : run.model.params) res.params.push_back(p.to_vector<double>());
  // Every rank holds the same parameters, so every rank stops here alike: a
  // run whose model ended non-finite did not succeed.
  if (const std::string nan = first_non_finite(res.params, run.names); !nan.empty())
    throw std::runtime_error("training diverged: after step " + std::to_string(run.total) + " there is " + nan +
                             " (a smaller --lr may help)");
  return res;
}

}  // namespace tide::train
