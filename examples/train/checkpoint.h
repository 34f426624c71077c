// Checkpoints of the data-parallel trainer: two safetensors files per run
// directory, written with tide::save (PyTorch and numpy read them).
// checkpoint.safetensors holds the model's parameters, in the model's dtype,
// under the names PyTorch gives the same MLP as an nn.Sequential of Linear
// and ReLU layers (0.weight, 0.bias, 2.weight, ...), so load_state_dict takes
// it as it is; optimizer.safetensors beside it holds the optimizer's state
// and the open log interval. Each file's metadata holds the run's
// fingerprint, the step and a checksum of its tensors; each is written
// atomically (a temporary file, fsync, rename, fsync of the directory), the
// optimizer's first, and a resume checks that both are of one step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <tide/tide.h>

namespace tide::train {

struct CheckpointState {
  /// Describes the run's model, optimizer and data order (run.cc);
  /// check_resumable says which differences a resume may continue across.
  std::string fingerprint;
  std::int64_t step = 0;  // global steps completed
  std::vector<std::vector<double>> tensors;
  /// Each tensor's name, shape and dtype in the files (written as given;
  /// empty: t0, t1, ..., one dimension, f64). Read back: in the order of
  /// the keys asked for, "" where one is missing, then any others.
  std::vector<std::string> names;
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<DType> dtypes;
  /// How many of the first tensors are the model's (checkpoint.safetensors);
  /// the rest go to optimizer.safetensors.
  std::size_t model_tensors = 0;
};

/// DIR/checkpoint.safetensors: the model.
std::string checkpoint_path(const std::string& dir);
/// DIR/optimizer.safetensors: the optimizer's state and the log interval.
std::string optimizer_path(const std::string& dir);
/// DIR/optimizer.previous.safetensors: the optimizer file of the checkpoint
/// before, kept so that a write killed between the two files leaves a pair.
std::string previous_optimizer_path(const std::string& dir);
/// DIR/checkpoint.tide: where the earliest format (raw f64, no names) was.
std::string old_checkpoint_path(const std::string& dir);

/// What prepare_checkpoint_dir removed.
struct StaleTemporaries {
  int files = 0;
  std::uintmax_t bytes = 0;
};

/// Makes `dir` ready for checkpoints before a run starts: creates it (with
/// its parents), checks that a file can be written there, and removes the
/// temporary files of writes that were killed (checkpoint.safetensors.tmp.PID
/// or optimizer.safetensors.tmp.PID whose process is gone from this host).
/// Throws std::runtime_error naming the directory and what is wrong.
StaleTemporaries prepare_checkpoint_dir(const std::string& dir);

/// Writes `s` atomically, file by file, creating `dir` if needed. Needs a
/// current engine (the values become tensors). Throws std::runtime_error
/// (tide::FileError: the path and errno text) on any failure.
void write_checkpoint(const std::string& dir, const CheckpointState& s);

/// The checkpoint in `dir`, its tensors in the order of `keys`, or nullopt
/// when there is no checkpoint.safetensors. Throws std::runtime_error when a
/// file exists but is damaged (not safetensors, not tide's, of another
/// version, truncated, checksum mismatch) or the two files are of different
/// checkpoints. The values themselves are the caller's to check.
std::optional<CheckpointState> read_checkpoint(const std::string& dir, const std::vector<std::string>& keys);

}  // namespace tide::train
