// What the trainer checks about its checkpoints: that a checkpoint read back
// can resume this run (every field, not only the checksum; what differs from
// the run that wrote it is either continued with a warning or refused,
// saying why), and that the state about to be written is finite, so a
// diverged run never replaces a good checkpoint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint.h"

namespace tide::train {

/// A name for each tensor the trainer keeps in a checkpoint, in order: the
/// parameters of `layers` layers (weights, biases), the optimizer's state
/// (momentum, or Adam's two moments), then the open log interval's loss and
/// correct-count sums per rank and its first step.
std::vector<std::string> checkpoint_tensor_names(int layers, bool adam);

/// The same tensors' keys in the checkpoint's files (safetensors): the
/// parameters as PyTorch names those of nn.Sequential(Linear, ReLU, Linear,
/// ..., Linear): 0.weight, 0.bias, 2.weight, ...; then momentum.0.weight
/// (or adam_m., adam_v.), ..., log.loss_sums, log.correct_counts,
/// log.first_step.
std::vector<std::string> checkpoint_tensor_keys(int layers, bool adam);

/// What this run expects of the checkpoint it resumes from.
struct ResumeExpectation {
  std::string dir;
  std::string fingerprint;
  std::vector<std::int64_t> state_sizes;  // values of each parameter and optimizer tensor
  std::vector<std::string> names;         // checkpoint_tensor_names
  std::vector<std::string> keys;          // checkpoint_tensor_keys
  std::int64_t total_steps = 0;           // where this run ends
};

/// What a resume continues across: a changed learning rate or momentum
/// (lowered to fine-tune), global batch, seed or dtype, each with a warning
/// saying what it changes.
struct ResumeNotes {
  std::vector<std::string> warnings;
  /// The global batch changed: the open log interval's sums (of the old
  /// batch) are dropped and the interval starts afresh at the resumed step.
  bool restart_log_interval = false;
};

/// Throws std::runtime_error naming the checkpoint, the field and what is
/// wrong with it: what cannot be continued (another model's widths, other
/// data, another optimizer), a tensor missing, unknown or of the wrong
/// size, a step outside [0, total steps], a non-finite value, malformed log
/// sums. Else says what differs from the run that wrote it.
ResumeNotes check_resumable(const CheckpointState& ck, const ResumeExpectation& want);

/// "" when every value is finite, else which tensor holds the first NaN or
/// infinity and where (for an error message).
std::string first_non_finite(const std::vector<std::vector<double>>& tensors, const std::vector<std::string>& names);

}  // namespace tide::train
