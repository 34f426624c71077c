// A run's checkpoints: at the start, rank 0 prepares the directory and, to
// resume, reads and checks the checkpoint, then tells the others what it
// found; during the run, rank 0 writes one when it is due.
//
// A checkpoint holds the state every rank keeps the same copy of
// (Run::everything(): the parameters in checkpoint.safetensors, the
// optimizer's state in optimizer.safetensors), then each rank's loss and
// correct-count sums of the open log interval (one value per rank), then
// {first step of that interval}. Resumed on as many ranks, each rank takes its own sums back; on
// another number of ranks, rank 0 takes the totals (the same up to rounding).
#include <algorithm>
#include <filesystem>
#include <optional>
#include <ostream>
#include <stdexcept>

#include "checkpoint.h"
#include "checkpoint_checks.h"
#include "run.h"

namespace tide::train {

namespace {

constexpr double kNone = 0, kOk = 1, kFailed = 2;  // what rank 0 found

/// On rank 0: prepares the directory and reads the checkpoint to resume
/// from. Returns {what it found, step, first step of the open interval,
/// ranks that wrote the checkpoint}; a failure is returned (kFailed, with
/// `why`), not thrown, so that the broadcast that follows reaches every rank.
std::vector<double> open_checkpoint_dir(Run& run, std::optional<CheckpointState>& ck, std::string& why) {
  const TrainConfig& cfg = run.cfg;
  try {
    const StaleTemporaries stale = prepare_checkpoint_dir(cfg.checkpoint_dir);
    if (stale.files > 0 && run.progress.out)
      *run.progress.out << "removed " << stale.files << " temporary file(s) ("
                        << fmt("%.1f", static_cast<double>(stale.bytes) / 1e6) << " MB) left in "
                        << cfg.checkpoint_dir << " by an interrupted checkpoint write\n";
    const std::string path = checkpoint_path(cfg.checkpoint_dir);
    // A checkpoint of the earlier format is not "none": resuming must not
    // start over beside it, nor a new run silently leave it behind.
    if (const std::string old = old_checkpoint_path(cfg.checkpoint_dir);
        !cfg.overwrite && std::filesystem::exists(old))
      throw std::runtime_error(old + " is a checkpoint of tide's earlier format (raw f64, before safetensors), "
                               "which this trainer does not read: continue it with the version that wrote it, "
                               "or start over with --overwrite (it is then left as it is)");
    if (!cfg.resume && !cfg.overwrite && std::filesystem::exists(path))
      throw std::runtime_error(path + " already holds a checkpoint: continue it with --resume, replace it "
                               "with --overwrite, or give another --checkpoint directory");
    if (cfg.resume) ck = read_checkpoint(cfg.checkpoint_dir, run.keys);
    if (!ck) return {kNone, 0, 0, 0};
    ResumeExpectation want{cfg.checkpoint_dir, run.fingerprint, {}, run.names, run.keys, run.total};
    for (Tensor* t : run.everything()) want.state_sizes.push_back(t->numel());
    const ResumeNotes notes = check_resumable(*ck, want);
    if (run.progress.out)
      for (const std::string& w : notes.warnings) *run.progress.out << "warning: " << w << "\n";
    if (notes.restart_log_interval) {
      const std::size_t n = run.everything().size();
      std::fill(ck->tensors[n].begin(), ck->tensors[n].end(), 0.0);
      std::fill(ck->tensors[n + 1].begin(), ck->tensors[n + 1].end(), 0.0);
      ck->tensors[n + 2] = {static_cast<double>(ck->step)};
    }
    return {kOk, static_cast<double>(ck->step), ck->tensors.back()[0],
            static_cast<double>(ck->tensors[run.everything().size()].size())};
  } catch (const std::exception& ex) {
    why = ex.what();
    return {kFailed, 0, 0, 0};
  }
}

/// Every rank's own interval sums back, from rank 0's checkpoint `ck`.
void restore_interval_sums(Run& run, const std::optional<CheckpointState>& ck, std::int64_t saved_ranks) {
  std::vector<double> sums(static_cast<std::size_t>(2 * saved_ranks), 0.0);
  if (run.rank == 0) {
    const auto& l = ck->tensors[run.everything().size()];
    const auto& c = ck->tensors[run.everything().size() + 1];
    std::copy(l.begin(), l.end(), sums.begin());
    std::copy(c.begin(), c.end(), sums.begin() + saved_ranks);
  }
  Tensor st = from_vector(sums, Shape{2 * saved_ranks});
  run.comm.broadcast_(st, 0);
  sums = st.to_vector<double>();
  double my_loss = 0, my_correct = 0;
  if (saved_ranks == run.ranks) {
    my_loss = sums[static_cast<std::size_t>(run.rank)];
    my_correct = sums[static_cast<std::size_t>(saved_ranks + run.rank)];
  } else if (run.rank == 0) {
    for (std::int64_t r = 0; r < saved_ranks; ++r) {
      my_loss += sums[static_cast<std::size_t>(r)];
      my_correct += sums[static_cast<std::size_t>(saved_ranks + r)];
    }
  }
  run.loss_sum = run.to_dev(host_tensor(std::vector<double>{my_loss}, Shape{}, run.cfg.dtype));
  run.correct_sum = run.to_dev(host_tensor(std::vector<double>{my_correct}, Shape{}, DType::i32));
}

/// Every failure is reported through the one broadcast of `meta`, so no
/// rank is left waiting.
void resume(Run& run) {
  const TrainConfig& cfg = run.cfg;
  std::vector<double> meta{kNone, 0, 0, 0};
  std::string why;
  std::optional<CheckpointState> ck;
  if (run.rank == 0) meta = open_checkpoint_dir(run, ck, why);
  Tensor m = from_vector(meta, Shape{4});
  run.comm.broadcast_(m, 0);
  meta = m.to_vector<double>();
  if (meta[0] == kFailed)
    throw std::runtime_error(run.rank == 0 ? why
                                           : "rank 0 could not use the checkpoint directory " + cfg.checkpoint_dir);
  if (meta[0] == kOk) {
    run.start = static_cast<std::int64_t>(meta[1]);
    run.log_from = static_cast<std::int64_t>(meta[2]);
    if (run.rank == 0) {
      NoGradGuard no_grad;  // writes the parameters in place
      auto all = run.everything();
      for (std::size_t i = 0; i < all.size(); ++i)
        copy_(*all[i], run.to_dev(host_tensor(ck->tensors[i], all[i]->shape(), all[i]->dtype())));
    }
    restore_interval_sums(run, ck, static_cast<std::int64_t>(meta[3]));
    if (run.progress.out)
      *run.progress.out << "resuming from " << checkpoint_path(cfg.checkpoint_dir) << " at step " << run.start
                        << (run.start == run.total ? ": the run is already complete" : "") << "\n";
  } else if (cfg.resume && run.progress.out) {
    *run.progress.out << "no checkpoint in " << cfg.checkpoint_dir << ": starting from step 0\n";
  }
}

}  // namespace

void start_or_resume(Run& run) {
  if (!run.cfg.checkpoint_dir.empty()) resume(run);
  // Every rank starts from rank 0's parameters and state.
  for (Tensor* t : run.everything()) run.comm.broadcast_(*t, 0);
}

bool checkpoint_due(const Run& run, std::int64_t step) {
  if (run.cfg.checkpoint_dir.empty()) return false;
  const bool epoch_end = (step + 1) % run.steps_per_epoch == 0;
  const bool due = run.cfg.checkpoint_every > 0 ? (step + 1) % run.cfg.checkpoint_every == 0 : epoch_end;
  return due || step + 1 == run.total;
}

void save_checkpoint(Run& run, std::int64_t step) {
  // The other ranks wait for rank 0's word under TIDE_COMM_TIMEOUT, which
  // must exceed the time a write takes.
  const TrainConfig& cfg = run.cfg;
  std::string why;
  Tensor loss_per_rank = run.comm.all_gather(run.loss_sum);
  Tensor correct_per_rank = run.comm.all_gather(run.correct_sum);
  if (run.rank == 0) {
    try {
      CheckpointState ck;
      ck.fingerprint = run.fingerprint;
      ck.step = step + 1;
      for (Tensor* t : run.everything()) {
        ck.tensors.push_back(t->to_vector<double>());
        ck.shapes.emplace_back(t->shape().begin(), t->shape().end());
        ck.dtypes.push_back(t->dtype());
      }
      ck.model_tensors = run.model.params.size();
      ck.tensors.push_back(loss_per_rank.to_vector<double>());
      ck.tensors.push_back(correct_per_rank.to_vector<double>());
      // A step count may pass i32's range; F64 holds it exactly (to 2^53).
      ck.tensors.push_back({static_cast<double>(run.log_from)});
      ck.dtypes.insert(ck.dtypes.end(), {loss_per_rank.dtype(), DType::i32, DType::f64});
      for (std::size_t i = ck.shapes.size(); i < ck.tensors.size(); ++i)
        ck.shapes.push_back({static_cast<std::int64_t>(ck.tensors[i].size())});
      ck.names = run.keys;
      if (const std::string nan = first_non_finite(ck.tensors, run.names); !nan.empty())
        throw std::runtime_error("training diverged: after step " + std::to_string(step + 1) + " there is " + nan +
                                 " (a smaller --lr may help); not writing that over the checkpoint in " +
                                 cfg.checkpoint_dir);
      write_checkpoint(cfg.checkpoint_dir, ck);
    } catch (const std::exception& ex) {
      why = ex.what();
    }
  }
  Tensor ok = from_vector(std::vector<std::int32_t>{why.empty() ? 1 : 0});
  run.comm.broadcast_(ok, 0);
  if (ok.item<std::int32_t>() != 1)
    throw std::runtime_error(run.rank == 0 ? why : "rank 0 could not write a checkpoint to " + cfg.checkpoint_dir);
}

}  // namespace tide::train
