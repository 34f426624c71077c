// The data-parallel MLP trainer behind examples/train_data_parallel: explicit
// forward and backward per layer, gradients reduced in buckets that overlap
// the rest of backward, SGD (momentum) or Adam, a minibatch sync policy,
// loss kept on the device between log lines, and atomic checkpoints.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <tide/comm/communicator.h>

#include "data.h"

namespace tide::train {

struct TrainConfig {
  std::vector<std::int64_t> hidden{512, 512};  // widths of the hidden layers
  std::int64_t batch = 64;                     // rows per rank per micro-batch
  /// Micro-batches per optimizer step (gradient accumulation): a step
  /// takes accum_steps x batch rows per rank, accum_steps forward and
  /// backward passes, one gradient reduction (in the last backward) and one
  /// optimizer update; it computes what one micro-batch of accum_steps x
  /// batch rows would. Steps, max_steps, log_every, checkpoint_every, the
  /// sampler and samples/s all count optimizer steps and their rows.
  int accum_steps = 1;
  /// Passes over the training set; 0: as many as max_steps needs, or 2
  /// without max_steps. Given with max_steps, the run ends at whichever
  /// comes first (the progress output says so when the epochs end it).
  int epochs = 0;
  std::int64_t max_steps = 0;  // stop after this many global (optimizer) steps (0: every epoch)
  std::string optimizer = "sgd";  // "sgd" (with momentum) or "adam"
  double lr = 0.05;
  double momentum = 0.9;  // SGD only
  double bucket_mb = 25.0;
  double first_bucket_mb = 1.0;  // the first bucket's cap (at most bucket_mb); 0: bucket_mb
  int lookahead = 2;      // steps in flight (SyncPolicy::steps); 0: no cap on steps
  int log_every = 50;     // steps between progress lines (each one a blocker)
  std::string checkpoint_dir;  // empty: no checkpoints
  int checkpoint_every = 0;    // steps; 0: at the end of every epoch
  bool resume = false;         // start from checkpoint_dir's checkpoint, if any
  /// Without resume, a checkpoint already in checkpoint_dir stops the run
  /// (it would be replaced); with overwrite the run starts over and its
  /// first checkpoint replaces it.
  bool overwrite = false;
  DType dtype = DType::f32;
  /// Where the model, its gradients and the optimizer state live: a GPU
  /// (its collectives then go through NCCL) or cpu:0. Batches are copied
  /// there from the host each step.
  Device device = cpu(0);
  std::uint64_t seed = 1;      // weights and data order
  bool trace = true;           // read the timeline to measure overlap (CPU only; see Run::timeline)
  /// A JSON line per log interval goes here (rank 0): loss, accuracy,
  /// throughput, stalls, blockers, queued bytes, and the bucket
  /// communication's time and the part hidden under backward. Empty: none.
  std::string metrics_path;

  /// Throws tide::ValueError naming the first bad field.
  void validate() const;
};

/// Where progress lines go (null: nowhere). `redraw` rewrites one line in
/// place (for a terminal) instead of printing a line per report; the line
/// is then cut to `columns` - 1 characters, so that it never wraps.
struct Progress {
  std::ostream* out = nullptr;
  bool redraw = false;
  int columns = 80;
};

/// "42s", "3m07s", "2h05m".
std::string format_duration(double seconds);

struct TrainResult {
  std::int64_t first_step = 0;   // > 0 after a resume
  std::int64_t steps_run = 0;    // in this call
  std::int64_t total_steps = 0;  // where the run ends
  std::int64_t global_batch = 0;  // rows per optimizer step, all ranks and micro-batches
  int accum_steps = 1;
  int classes = 0;
  std::vector<double> losses;      // mean loss of each log interval, all ranks
  double last_loss = 0;            // mean over the last log interval, all ranks
  double last_train_accuracy = 0;  // same interval
  double test_accuracy = 0;        // held-out rows, all ranks
  // Timing, over the steady part of the run (after a few warm-up steps).
  double step_ms = 0;
  double samples_per_s = 0;
  // Engine stats over the whole loop.
  double blockers_per_step = 0;
  std::uint64_t stalls = 0;
  double stalled_ms = 0;
  std::uint64_t peak_queued_bytes = 0;
  // Communication of the gradient buckets (pack, all-reduce, unpack), from the
  // engine's timeline: time per step and the share that ran while backward
  // was still computing. -1 when not traced.
  double comm_ms_per_step = -1;
  double comm_hidden_fraction = -1;
  /// Steps whose first bucket began before their backward ended.
  std::int64_t steps_first_bucket_overlapped = 0;
  std::int64_t steps_measured = 0;
  std::string buckets;  // GradientReducer::describe()
  std::vector<std::vector<double>> params;  // final parameters, for checks
};

/// Trains on `data` with the current engine, `comm` giving the ranks. Every
/// rank calls it with the same config. Throws tide::Error or
/// std::runtime_error (bad config, unreadable checkpoint, backend failure).
TrainResult train(Communicator& comm, const Split& data, const TrainConfig& cfg,
                  const Progress& progress = {});

/// A few lines a person can read.
std::string summary(const TrainResult& r, int ranks);

/// `text` with every line longer than `width` characters broken at its last
/// spaces within it, the rest indented two more spaces than the line: for a
/// terminal of width + 1 columns, so that nothing wraps. A word longer than
/// the room is cut. `width` < 20: `text` as it is.
std::string wrap_lines(const std::string& text, int width);

}  // namespace tide::train
