// The data-parallel trainer end to end, on 1 or more ranks: it learns, data
// parallelism computes the same step as one rank with the global batch, so
// do accumulated micro-batches as one batch of their rows, a resumed run
// matches an uninterrupted one, and bucket reductions overlap backward on
// the engine's timeline.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "../gpu_ranks_util.h"
#include "mpi_test.h"
#include "train/checkpoint.h"
#include "train/checkpoint_checks.h"
#include "train/trainer.h"

namespace tide::test {
namespace {

using namespace tide::train;

TrainResult run_training(Communicator& comm, const Split& data, const TrainConfig& c) {
  return tide::train::train(comm, data, c);
}

const Split& task() {
  static const Split s = make_generated(4096, 1024, 64, 4, 99);
  return s;
}

/// Global batch 64, split over the ranks.
TrainConfig small_config() {
  TrainConfig c;
  c.hidden = {64, 32};
  c.batch = 64 / world().size();
  c.epochs = 1;
  c.lr = 0.05;
  c.log_every = 8;
  return c;
}

/// A directory every rank agrees on (rank 0's pid), removed at the end.
struct SharedDir {
  SharedDir() {
    Tensor pid = from_vector(std::vector<std::int32_t>{static_cast<std::int32_t>(::getpid())});
    world().broadcast_(pid, 0);
    path = (std::filesystem::temp_directory_path() / ("tide-train-test-" + std::to_string(pid.item<std::int32_t>())))
               .string();
    if (world().rank() == 0) std::filesystem::remove_all(path);
    world().barrier();
  }
  ~SharedDir() {
    world().barrier();
    if (world().rank() == 0) std::filesystem::remove_all(path);
  }
  std::string path;
};

double max_rel_diff(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < a[i].size(); ++j)
      worst = std::max(worst, std::abs(a[i][j] - b[i][j]) / std::max(1e-3, std::abs(a[i][j])));
  return worst;
}

TEST(WrapLines, BreaksLongLinesAtSpacesWithAHangingIndent) {
  EXPECT_EQ(wrap_lines("short\n  also short", 30), "short\n  also short");
  // 41 characters into 30: broken at the last space within 30, the rest
  // indented by two more than its line.
  EXPECT_EQ(wrap_lines("  final loss 0.2638, train accuracy 90.0%", 30),
            "  final loss 0.2638, train\n    accuracy 90.0%");
  // Several breaks, and a word longer than the room is cut.
  EXPECT_EQ(wrap_lines("aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj", 20),
            "aaaa bbbb cccc dddd\n  eeee ffff gggg\n  hhhh iiii jjjj");
  EXPECT_EQ(wrap_lines(std::string(45, 'x'), 20),
            std::string(20, 'x') + "\n  " + std::string(18, 'x') + "\n  " + std::string(7, 'x'));
  // Every line fits; nothing but line breaks and indents is added.
  const std::string text = "trained steps 0..200 on 1 rank (global batch 64)\n"
                           "  final loss 0.2638, train accuracy 90.0%, held-out accuracy 93.5% (chance 10.0%)\n"
                           "  bucket communication 43.781 ms per step, 0.2% of it while backward computed; first "
                           "bucket began before backward ended in 82 of 90 steps\n";
  for (int width : {20, 40, 79}) {
    const std::string w = wrap_lines(text, width);
    std::istringstream in(w);
    std::string words_in, words_out, line, word;
    while (std::getline(in, line)) EXPECT_LE(line.size(), static_cast<std::size_t>(width)) << line;
    std::istringstream a(text), b(w);
    while (a >> word) words_in += word + " ";
    while (b >> word) words_out += word + " ";
    EXPECT_EQ(words_out, words_in) << "width " << width;
    EXPECT_EQ(w.back(), '\n');
  }
  EXPECT_EQ(wrap_lines(text, 0), text);  // not a terminal: as it is
}

TEST(Trainer, LearnsTheGeneratedTask) {
  TrainConfig c = small_config();
  c.epochs = 3;
  TrainResult r = run_training(world(), task(), c);
  ASSERT_GE(r.losses.size(), 4u);
  EXPECT_LT(r.losses.back(), 0.5 * r.losses.front()) << "the loss must fall";
  EXPECT_GT(r.test_accuracy, 0.80) << "chance is 0.25";
  EXPECT_EQ(r.steps_run, 3 * (4096 / (c.batch * world().size())));
  EXPECT_LE(r.blockers_per_step, 0.5) << "only log lines block";
}

/// Data parallelism on `device` computes the same step as one rank with the
/// global batch: f64, several buckets, 12 steps.
void expect_data_parallel_matches_one_rank(Device device) {
  TrainConfig c = small_config();
  c.dtype = DType::f64;
  c.max_steps = 12;
  c.bucket_mb = 0.004;  // several buckets
  c.device = device;
  auto one_rank = Communicator::local();
  TrainConfig global = c;
  global.batch = c.batch * world().size();
  TrainResult reference = run_training(*one_rank, task(), global);
  TrainResult parallel = run_training(world(), task(), c);
  EXPECT_LT(max_rel_diff(reference.params, parallel.params), 1e-9) << parallel.buckets;
  EXPECT_NEAR(reference.last_loss, parallel.last_loss, 1e-9);
  // Not a vacuous match: the parameters moved away from their start.
  TrainConfig frozen = global;
  frozen.lr = 0;
  TrainResult start = run_training(*one_rank, task(), frozen);
  EXPECT_GT(max_rel_diff(start.params, reference.params), 1e-3);
}

TEST(Trainer, DataParallelMatchesOneRankWithTheGlobalBatch) {
  if (world().size() < 2) GTEST_SKIP() << "needs at least 2 ranks";
  expect_data_parallel_matches_one_rank(cpu(0));
}

// Gradient accumulation: K micro-batches of B rows per rank give the same
// parameters as one batch of K x B rows (f64, several buckets, SGD with
// momentum), on this many ranks and on one rank with the whole global batch.
TEST(Trainer, AccumulatedMicroBatchesMatchOneBatchOfTheirRows) {
  TrainConfig whole = small_config();  // 64 rows per step, over the ranks
  whole.dtype = DType::f64;
  whole.max_steps = 12;
  whole.log_every = 4;
  whole.bucket_mb = 0.004;  // several buckets
  TrainConfig micro = whole;
  micro.accum_steps = 4;
  micro.batch = whole.batch / 4;
  ASSERT_EQ(micro.batch * 4, whole.batch);
  TrainResult reference = run_training(world(), task(), whole);
  TrainResult accumulated = run_training(world(), task(), micro);
  EXPECT_EQ(accumulated.global_batch, reference.global_batch);
  EXPECT_EQ(accumulated.steps_run, 12);
  EXPECT_LT(max_rel_diff(reference.params, accumulated.params), 1e-9) << accumulated.buckets;
  ASSERT_EQ(accumulated.losses.size(), reference.losses.size());
  for (std::size_t i = 0; i < reference.losses.size(); ++i)
    EXPECT_NEAR(accumulated.losses[i], reference.losses[i], 1e-9) << "log line " << i;
  EXPECT_NEAR(accumulated.last_train_accuracy, reference.last_train_accuracy, 1e-12);
  if (world().size() > 1) {
    // One rank with the global batch, accumulated too.
    auto one_rank = Communicator::local();
    TrainConfig alone = micro;
    alone.batch = micro.batch * world().size();
    EXPECT_LT(max_rel_diff(reference.params, run_training(*one_rank, task(), alone).params), 1e-9);
  }
  // Not a vacuous match: the parameters moved away from their start.
  TrainConfig frozen = whole;
  frozen.lr = 0;
  EXPECT_GT(max_rel_diff(run_training(world(), task(), frozen).params, reference.params), 1e-3);
}

TEST(Trainer, ResumeMatchesAnUninterruptedRun) {
  SharedDir dir;
  TrainConfig c = small_config();
  c.optimizer = "adam";
  c.lr = 1e-3;
  c.max_steps = 20;
  c.log_every = 4;
  TrainResult straight = run_training(world(), task(), c);

  TrainConfig first = c;
  first.checkpoint_dir = dir.path;
  first.checkpoint_every = 7;
  first.max_steps = 9;  // stops at 9: the last checkpoint is at 9
  run_training(world(), task(), first);
  TrainConfig second = c;
  second.checkpoint_dir = dir.path;
  second.checkpoint_every = 7;
  second.resume = true;
  TrainResult resumed = run_training(world(), task(), second);
  EXPECT_EQ(resumed.first_step, 9);
  EXPECT_EQ(resumed.steps_run, 11);
  EXPECT_EQ(resumed.params, straight.params) << "bit for bit";
  // Every log line after the resume, including the interval the checkpoint
  // cut in two, reads as in the uninterrupted run.
  ASSERT_LE(resumed.losses.size(), straight.losses.size());
  EXPECT_EQ(resumed.losses, std::vector<double>(straight.losses.end() - static_cast<std::ptrdiff_t>(resumed.losses.size()),
                                                straight.losses.end()));
  EXPECT_EQ(resumed.losses.size(), 3u) << "log lines at steps 12, 16 and 20";

  // Resuming a finished run does nothing; a run shorter than the checkpoint is refused.
  TrainResult again = run_training(world(), task(), second);
  EXPECT_EQ(again.first_step, 20);
  EXPECT_EQ(again.steps_run, 0);
  EXPECT_EQ(again.params, straight.params);
  TrainConfig shorter = second;
  shorter.max_steps = 5;
  EXPECT_THROW(run_training(world(), task(), shorter), std::runtime_error);

  // A checkpoint of another model is refused, on every rank.
  TrainConfig other = second;
  other.hidden = {16};
  EXPECT_THROW(run_training(world(), task(), other), std::runtime_error);
}

TEST(Trainer, BucketsReduceWhileBackwardComputes) {
  if (world().size() == 1) GTEST_SKIP() << "one rank reduces no bucket; run on 2 ranks";
  TrainConfig c = small_config();
  // Wide hidden layers: after the first (small) bucket there are milliseconds
  // of backward left. Lookahead 1 starts every step with idle streams, so the
  // comm stream is not still busy with the previous step's last bucket (which
  // on a loaded machine may wait for a slower peer).
  c.hidden = {1024, 1024};
  c.lookahead = 1;
  c.max_steps = 30;
  c.bucket_mb = 0.1;
  TrainResult r = run_training(world(), task(), c);
  ASSERT_GT(r.steps_measured, 0);
  // From the engine's timeline: the first bucket's work began before the
  // step's backward ended.
  EXPECT_GT(r.steps_first_bucket_overlapped, 0) << r.buckets << ", " << r.steps_measured << " steps measured";
}

// The same run with the model on this rank's GPU (NCCL for the gradients,
// cuBLAS for the products): f64, so that the two backends' different
// summation orders stay far below the tolerance; then a resume on the GPU.
TEST(Trainer, OnTheGpuMatchesTheCpu) {
  TIDE_REQUIRE_NCCL_ON_EVERY_RANK();
  TrainConfig c = small_config();
  c.dtype = DType::f64;
  c.max_steps = 24;
  TrainResult on_cpu = run_training(world(), task(), c);
  c.device = rt().device();
  TrainResult on_gpu = run_training(world(), task(), c);
  EXPECT_LT(max_rel_diff(on_gpu.params, on_cpu.params), 1e-9);
  EXPECT_NEAR(on_gpu.last_loss, on_cpu.last_loss, 1e-9);
  EXPECT_EQ(on_gpu.test_accuracy, on_cpu.test_accuracy);

  SharedDir dir;
  TrainConfig first = c;
  first.checkpoint_dir = dir.path;
  first.checkpoint_every = 10;
  first.max_steps = 10;
  run_training(world(), task(), first);
  TrainConfig second = first;
  second.max_steps = 24;
  second.resume = true;
  TrainResult resumed = run_training(world(), task(), second);
  EXPECT_EQ(resumed.first_step, 10);
  EXPECT_EQ(resumed.params, on_gpu.params) << "bit for bit on one GPU";
}

// Data parallelism on the GPUs (NCCL all-reduces the gradient buckets)
// computes the same step as one rank with the global batch on its GPU: the
// CPU path's check, on the GPU, f64 so that summation order stays far below
// the tolerance.
TEST(Trainer, DataParallelOnTheGpuMatchesOneRankWithTheGlobalBatch) {
  if (world().size() < 2) GTEST_SKIP() << "needs at least 2 ranks";
  TIDE_REQUIRE_NCCL_ON_EVERY_RANK();
  expect_data_parallel_matches_one_rank(rt().device());
}

/// The message of the runtime_error `f` throws ("no error" when none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "no error";
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Checkpoints, AnExistingOneIsReplacedOnlyWithOverwrite) {
  SharedDir dir;
  TrainConfig c = small_config();
  c.max_steps = 6;
  c.checkpoint_dir = dir.path;
  run_training(world(), task(), c);
  const std::string before = file_bytes(checkpoint_path(dir.path));
  ASSERT_FALSE(before.empty());
  TrainConfig again = c;
  again.seed = 2;
  const std::string why = error_of([&] { run_training(world(), task(), again); });
  if (world().rank() == 0) {
    EXPECT_NE(why.find(checkpoint_path(dir.path) + " already holds a checkpoint: continue it with --resume, "
                                                   "replace it with --overwrite"),
              std::string::npos)
        << why;
  } else {
    EXPECT_NE(why.find("rank 0 could not use the checkpoint directory"), std::string::npos) << why;
  }
  world().barrier();
  EXPECT_EQ(file_bytes(checkpoint_path(dir.path)), before) << "untouched";
  again.overwrite = true;
  run_training(world(), task(), again);
  EXPECT_NE(file_bytes(checkpoint_path(dir.path)), before) << "replaced";
}

TEST(Checkpoints, ADivergedRunKeepsTheLastGoodOne) {
  SharedDir dir;
  TrainConfig c = small_config();
  c.max_steps = 8;
  c.checkpoint_dir = dir.path;
  run_training(world(), task(), c);
  TrainConfig wild = c;
  wild.lr = 1e30;
  wild.checkpoint_every = 4;
  wild.overwrite = true;
  const std::string why = error_of([&] { run_training(world(), task(), wild); });
  if (world().rank() == 0) {
    EXPECT_NE(why.find("training diverged: after step 4 there is "), std::string::npos) << why;
  } else {
    EXPECT_NE(why.find("rank 0 could not write a checkpoint"), std::string::npos) << why;
  }
  world().barrier();
  auto kept = read_checkpoint(dir.path, checkpoint_tensor_keys(3, false));
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->step, 8);
  EXPECT_EQ(first_non_finite(kept->tensors, {}), "");
}

TEST(Trainer, ADivergedRunWithoutCheckpointsFails) {
  TrainConfig wild = small_config();
  wild.max_steps = 6;
  wild.lr = 1e30;
  const std::string why = error_of([&] { run_training(world(), task(), wild); });
  EXPECT_NE(why.find("training diverged: after step 6 there is "), std::string::npos) << why;
}

TEST(Checkpoints, EveryFieldReadBackIsChecked) {
  SharedDir dir;
  TrainConfig c = small_config();
  c.max_steps = 6;
  c.log_every = 4;
  c.checkpoint_dir = dir.path;
  run_training(world(), task(), c);
  world().barrier();
  std::optional<CheckpointState> good;
  if (world().rank() == 0) good = read_checkpoint(dir.path, checkpoint_tensor_keys(3, false));
  TrainConfig resume = c;
  resume.max_steps = 12;
  resume.resume = true;
  auto forged = [&](const std::function<void(CheckpointState&)>& change) {
    if (world().rank() == 0) {
      CheckpointState s = *good;
      change(s);
      // A tensor whose size changed is written with a shape that holds it.
      for (std::size_t i = 0; i < s.tensors.size(); ++i) {
        std::int64_t held = 1;
        for (std::int64_t d : s.shapes[i]) held *= d;
        if (held != static_cast<std::int64_t>(s.tensors[i].size()))
          s.shapes[i] = {static_cast<std::int64_t>(s.tensors[i].size())};
      }
      write_checkpoint(dir.path, s);
    }
    world().barrier();
    return error_of([&] { run_training(world(), task(), resume); });
  };
  const std::size_t n = good ? good->tensors.size() : 0;  // rank 0's
  const std::vector<std::pair<std::function<void(CheckpointState&)>, std::string>> cases{
      {[](CheckpointState& s) { s.step = -50; }, "is at step -50, which is negative"},
      {[](CheckpointState& s) { s.step = 13; }, "is at step 13, past the end of this run (12 steps)"},
      {[n](CheckpointState& s) { s.tensors[n - 1] = {-3}; }, "has a log interval that starts at step -3"},
      {[n](CheckpointState& s) { s.tensors[n - 1] = {7}; }, "has a log interval that starts at step 7"},
      // Counts an I32 tensor cannot hold, in a file that holds them as F64.
      {[n](CheckpointState& s) { s.tensors[n - 2][0] = 1e12, s.dtypes[n - 2] = DType::f64; }, "has a correct count of"},
      {[n](CheckpointState& s) { s.tensors[n - 2][0] = 0.5, s.dtypes[n - 2] = DType::f64; }, "has a correct count of"},
      {[n](CheckpointState& s) { s.tensors[n - 2].push_back(1); }, "has malformed interval sums"},
      {[](CheckpointState& s) { s.tensors[1][0] = std::nan(""); }, "holds NaN in the layer 0 biases"},
      {[](CheckpointState& s) { s.tensors[2].pop_back(); }, "values for the layer 1 weights"},
      {[](CheckpointState& s) { s.names[0].assign(1, 'w'); }, "has no '0.weight' (the layer 0 weights)"},
      {[](CheckpointState& s) { s.fingerprint += "x"; }, "cannot be continued by this run: the training data differ"},
  };
  for (const auto& [change, want] : cases) {
    const std::string why = forged(change);
    if (world().rank() == 0) {
      EXPECT_NE(why.find(want), std::string::npos) << want << ": " << why;
    } else {
      EXPECT_NE(why.find("rank 0 could not use the checkpoint directory"), std::string::npos) << why;
    }
  }
  EXPECT_EQ(forged([](CheckpointState&) {}), "no error") << "the genuine checkpoint resumes";
}

TEST(Checkpoints, ResumeContinuesAChangedLrOrBatchAndRefusesAnotherOptimizer) {
  SharedDir dir;
  TrainConfig c = small_config();
  c.max_steps = 6;
  c.checkpoint_dir = dir.path;
  run_training(world(), task(), c);
  TrainConfig more = c;
  more.resume = true;
  more.max_steps = 8;
  more.lr = 0.01;  // a lower learning rate to fine-tune
  EXPECT_EQ(run_training(world(), task(), more).first_step, 6);
  more.max_steps = 10;
  more.batch = c.batch * 2;  // another global batch
  TrainResult r = run_training(world(), task(), more);
  EXPECT_EQ(r.first_step, 8);
  EXPECT_EQ(r.steps_run, 2);
  TrainConfig adam = more;
  adam.optimizer = "adam";
  adam.max_steps = 12;
  const std::string why = error_of([&] { run_training(world(), task(), adam); });
  if (world().rank() == 0) {
    EXPECT_NE(why.find("cannot be continued by this run: the optimizer differs"), std::string::npos) << why;
  } else {
    EXPECT_NE(why.find("rank 0 could not use the checkpoint directory"), std::string::npos) << why;
  }
}

TEST(Checkpoints, AnEarlierFormatIsRefusedNotIgnored) {
  // A directory holding only the earlier format's checkpoint.tide: resuming
  // must not start over beside it as if there were none.
  SharedDir dir;
  if (world().rank() == 0) {
    std::filesystem::create_directories(dir.path);
    std::ofstream(dir.path + "/checkpoint.tide") << "TIDECKP1";
  }
  world().barrier();
  TrainConfig c = small_config();
  c.max_steps = 4;
  c.checkpoint_dir = dir.path;
  c.resume = true;
  const std::string why = error_of([&] { run_training(world(), task(), c); });
  if (world().rank() == 0) {
    EXPECT_NE(why.find("checkpoint.tide is a checkpoint of tide's earlier format"), std::string::npos) << why;
  }
  // --overwrite starts over and leaves it as it is.
  c.resume = false;
  c.overwrite = true;
  EXPECT_EQ(error_of([&] { run_training(world(), task(), c); }), "no error");
}

TEST(Checkpoints, AnUnwritableDirectoryStopsTheRunBeforeTraining) {
  SharedDir dir;
  if (world().rank() == 0) {
    std::filesystem::create_directories(dir.path);
    std::ofstream(dir.path + "/file") << "not a directory";
  }
  world().barrier();
  TrainConfig c = small_config();
  c.max_steps = 4;
  c.log_every = 1;
  c.checkpoint_dir = dir.path + "/file/ck";
  std::ostringstream out;
  const std::string why = error_of([&] { tide::train::train(world(), task(), c, {&out}); });
  if (world().rank() == 0) {
    EXPECT_NE(why.find("cannot create the checkpoint directory " + c.checkpoint_dir), std::string::npos) << why;
  }
  EXPECT_EQ(out.str().find("step 1/"), std::string::npos) << "no step ran:\n" << out.str();
}

TEST(Checkpoints, TemporariesOfAKilledWriteAreRemovedAtStart) {
  SharedDir dir;
  const std::string stale = checkpoint_path(dir.path) + ".tmp.999999999";
  if (world().rank() == 0) {
    std::filesystem::create_directories(dir.path);
    std::ofstream(stale) << std::string(4096, 'x');
  }
  world().barrier();
  TrainConfig c = small_config();
  c.max_steps = 2;
  c.checkpoint_dir = dir.path;
  std::ostringstream out;
  tide::train::train(world(), task(), c, {world().rank() == 0 ? &out : nullptr});
  world().barrier();
  EXPECT_FALSE(std::filesystem::exists(stale));
  if (world().rank() == 0) {
    EXPECT_NE(out.str().find("removed 1 temporary file(s) (0.0 MB) left in " + dir.path), std::string::npos)
        << out.str();
  }
}

void write_idx(const std::string& path, std::vector<std::uint8_t> dims_and_data) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(dims_and_data.data()), static_cast<std::streamsize>(dims_and_data.size()));
}

/// MNIST-shaped files of `n` 2x2 images.
void write_small_mnist(const std::string& dir, const std::string& stem, std::uint8_t n) {
  std::vector<std::uint8_t> images{0, 0, 8, 3, 0, 0, 0, n, 0, 0, 0, 2, 0, 0, 0, 2};
  std::vector<std::uint8_t> labels{0, 0, 8, 1, 0, 0, 0, n};
  for (int i = 0; i < n; ++i) {
    const int label = i % 3;
    for (int p = 0; p < 4; ++p) images.push_back(static_cast<std::uint8_t>((p == label ? 200 : 20) + i % 7));
    labels.push_back(static_cast<std::uint8_t>(label));
  }
  write_idx(dir + "/" + stem + "-images-idx3-ubyte", images);
  write_idx(dir + "/" + stem + "-labels-idx1-ubyte", labels);
}

TEST(Checkpoints, ResumeKnowsTheSameDataByAnotherPath) {
  SharedDir dir;
  const std::string data_dir = dir.path + "/mnist";
  if (world().rank() == 0) {
    std::filesystem::create_directories(data_dir);
    write_small_mnist(data_dir, "train", 128);
    write_small_mnist(data_dir, "t10k", 16);
  }
  world().barrier();
  TrainConfig c = small_config();
  c.batch = 16 / world().size();
  c.max_steps = 4;
  c.checkpoint_dir = dir.path + "/ck";
  run_training(world(), load_mnist(data_dir), c);
  TrainConfig more = c;
  more.resume = true;
  more.max_steps = 6;
  EXPECT_EQ(run_training(world(), load_mnist(data_dir + "/"), more).first_step, 4) << "a trailing slash";
  more.max_steps = 8;
  const std::string relative = std::filesystem::relative(data_dir).string();
  EXPECT_EQ(run_training(world(), load_mnist(relative), more).first_step, 6) << relative;
}

// A checkpoint of an accumulating run resumes only with as many micro-batches.
TEST(Trainer, AResumeMayChangeTheMicroBatches) {
  SharedDir dir;
  TrainConfig c = small_config();
  c.accum_steps = 2;
  c.batch /= 2;
  c.max_steps = 4;
  c.checkpoint_dir = dir.path;
  run_training(world(), task(), c);
  TrainConfig other = c;
  other.resume = true;
  other.max_steps = 6;
  other.accum_steps = 1;
  other.batch *= 2;  // the same global batch
  // The same rows per step in one micro-batch: it continues (with a warning).
  EXPECT_EQ(run_training(world(), task(), other).first_step, 4);
  // And back to 2 micro-batches.
  other.max_steps = 8;
  other.accum_steps = 2;
  other.batch = c.batch;
  EXPECT_EQ(run_training(world(), task(), other).first_step, 6);
}

TEST(Trainer, BadConfigIsRefused) {
  TrainConfig c = small_config();
  c.optimizer = "lbfgs";
  EXPECT_THROW(run_training(world(), task(), c), ValueError);
  c = small_config();
  c.resume = true;
  EXPECT_THROW(run_training(world(), task(), c), ValueError);
  c = small_config();
  c.batch = 100000;
  EXPECT_THROW(run_training(world(), task(), c), std::invalid_argument);
  c = small_config();
  c.overwrite = true;
  EXPECT_THROW(run_training(world(), task(), c), ValueError) << "overwrite needs a checkpoint directory";
  c.checkpoint_dir = "unused";
  c.resume = true;
  EXPECT_THROW(run_training(world(), task(), c), ValueError) << "resume and overwrite contradict";
  c = small_config();
  c.accum_steps = 0;
  EXPECT_THROW(run_training(world(), task(), c), ValueError) << "no micro-batch per step";
  c = small_config();
  c.first_bucket_mb = -1;
  EXPECT_THROW(run_training(world(), task(), c), ValueError);
  c = small_config();
  c.accum_steps = 4096;  // 4096 x 64 rows: more than the training set
  EXPECT_THROW(run_training(world(), task(), c), std::invalid_argument);
}

}  // namespace
}  // namespace tide::test
