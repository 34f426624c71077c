// Checkpoints of the data-parallel trainer: one file per run directory in
// the safetensors layout (safetensors.h: PyTorch and numpy read it), its
// metadata the run's fingerprint, the step and a checksum of the tensors'
// bytes; written atomically (a temporary file, fsync, rename, fsync of the
// directory), so a crash leaves either the old checkpoint or the new one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tide::train {

struct CheckpointState {
  /// Describes the run's model, optimizer and data order; a resume with a
  /// different one is refused.
  std::string fingerprint;
  std::int64_t step = 0;  // global steps completed
  std::vector<std::vector<double>> tensors;
  /// Each tensor's name and shape in the file (written as given; empty: t0,
  /// t1, ... and one dimension). Read back from the file.
  std::vector<std::string> names;
  std::vector<std::vector<std::int64_t>> shapes;
};

/// DIR/checkpoint.safetensors.
std::string checkpoint_path(const std::string& dir);
/// DIR/checkpoint.tide: where the earlier format (raw f64, no names) was.
std::string old_checkpoint_path(const std::string& dir);

/// What prepare_checkpoint_dir removed.
struct StaleTemporaries {
  int files = 0;
  std::uintmax_t bytes = 0;
};

/// Makes `dir` ready for checkpoints before a run starts: creates it (with
/// its parents), checks that a file can be written there, and removes the
/// temporary files of writes that were killed (checkpoint.safetensors.tmp.PID whose
/// process is gone from this host). Throws std::runtime_error naming the
/// directory and what is wrong.
StaleTemporaries prepare_checkpoint_dir(const std::string& dir);

/// Writes `s` atomically, creating `dir` if needed. Throws std::runtime_error
/// (with the path and errno text) on any failure.
void write_checkpoint(const std::string& dir, const CheckpointState& s);

/// The checkpoint in `dir`, or nullopt when there is none. Throws
/// std::runtime_error when the file exists but is damaged (not safetensors,
/// not tide's, truncated, checksum mismatch, a size longer than the file).
/// The values themselves are the caller's to check.
std::optional<CheckpointState> read_checkpoint(const std::string& dir);

}  // namespace tide::train
