// What one call of train() works with, and the steps its loop is made of.
// Internal to the trainer: trainer.h is the interface.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <tide/comm/reducer.h>
#include <tide/tide.h>

#include "model.h"
#include "overlap.h"
#include "trainer.h"

namespace tide::train {

/// Host buffers for one batch, reused from step to step.
struct Batch {
  std::vector<float> x;
  std::vector<std::int32_t> y;
};

/// The model, its gradient reducer and optimizer state, the on-device loss
/// and accuracy sums of the open log interval, and where the run starts and
/// ends. Every rank builds the same one.
struct Run {
  Run(Communicator& comm, const Split& data, const TrainConfig& cfg, const Progress& progress);
  // The parameters' gradient hooks hold `this`.
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  Communicator& comm;
  const Split& data;
  const TrainConfig& cfg;
  const Progress& progress;
  Engine& e;
  const int rank, ranks;
  const Device dev;
  // The timeline times host work: on a GPU that is a kernel's launch, not its
  // run, so the overlap figures would mean nothing there: read on the CPU
  // only. When it goes to a file (TIDE_TRACE, --trace) it is the file's:
  // read with a cursor and left whole; otherwise the trainer records it and
  // takes it (own_trace), for 200 steps after the warm-up, or the whole run
  // with --metrics.
  const bool timeline;
  const bool own_trace;
  Engine::TraceCursor cursor;
  OverlapMeter meter;
  OverlapFigures overall;  // the run-wide figures: up to 200 steps after the warm-up
  std::int64_t measure_from = 0, measure_to = 0;  // [from, to): the steps in `overall`
  std::unique_ptr<std::ofstream> metrics;          // rank 0, with cfg.metrics_path
  Stats at_last_log;                               // the engine's stats at the last log line
  const bool adam;
  Sampler sampler;
  const std::int64_t steps_per_epoch, total;  // global steps; the run ends at `total`
  Model model;
  GradientReducer reducer;
  std::vector<Tensor> state1, state2;  // momentum, or Adam's two moments
  Tensor loss_sum, correct_sum;        // of the open log interval, on the device
  std::string fingerprint;             // rank 0 only
  std::vector<std::string> names;      // checkpoint_tensor_names
  std::vector<std::string> keys;       // checkpoint_tensor_keys
  std::int64_t start = 0;              // first step of this call
  std::int64_t log_from = 0;           // first step of the open log interval
  double started_s = 0;                // when the loop began (now_s)

  /// A batch (or a resumed value) from host memory onto the model's device.
  Tensor to_dev(const Tensor& host) const;
  /// The state every rank holds the same copy of, in a fixed order:
  /// parameters, then optimizer state.
  std::vector<Tensor*> everything();
};

/// The engine's sync policy and tracing for the loop, given back however
/// train() ends.
class EngineSettings {
 public:
  EngineSettings(Engine& e, int lookahead, bool trace);
  ~EngineSettings();
  EngineSettings(const EngineSettings&) = delete;
  EngineSettings& operator=(const EngineSettings&) = delete;

 private:
  void restore();
  Engine& e_;
  SyncPolicy policy_;
  bool was_tracing_;
};

/// Rank 0 prepares the checkpoint directory and, with cfg.resume, loads the
/// checkpoint; then every rank starts from rank 0's parameters and state.
void start_or_resume(Run& run);

/// One minibatch: forward, backward with gradients handed to the reducer
/// layer by layer, the optimizer bucket by bucket. Returns the push indices
/// of its backward, for the overlap figures.
BackwardRange train_step(Run& run, std::int64_t step, Batch& batch);

/// The result's fields known before the first step.
TrainResult start_result(Run& run);

/// Feeds the timeline recorded since the last read to the meter and closes
/// the steps through `through`: their figures (and those in the run-wide
/// window into run.overall). Nothing without a timeline.
OverlapFigures read_timeline(Run& run, std::int64_t through);

/// Whether a progress line (and the end of a log interval) falls after `step`.
bool log_due(const Run& run, std::int64_t step);
/// The interval's mean loss and accuracy across ranks (the loop's only
/// blockers) into `res`, a progress line, and a fresh interval.
void report_progress(Run& run, std::int64_t step, TrainResult& res, double& t_log);

/// Whether a checkpoint falls after `step`.
bool checkpoint_due(const Run& run, std::int64_t step);
/// Rank 0 writes the checkpoint after `step`; every rank learns whether
/// that worked, so a failed write ends the run everywhere at once.
void save_checkpoint(Run& run, std::int64_t step);

/// Step time and throughput over the `timed_s` seconds after the first
/// `warm` steps, and the engine's stats over the loop, into `res`.
void record_speed(const Run& run, std::int64_t warm, double timed_s, TrainResult& res);

/// Accuracy on the held-out rows, each rank scoring its share.
double test_accuracy(Run& run, Batch& batch);

/// printf of one number ("%.4f").
std::string fmt(const char* f, double v);

/// Seconds on a steady clock.
double now_s();

}  // namespace tide::train
