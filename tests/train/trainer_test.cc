// The data-parallel trainer end to end, on 1 or more ranks: it learns, data
// parallelism computes the same step as one rank with the global batch, a
// resumed run matches an uninterrupted one, and bucket reductions overlap
// backward on the engine's timeline.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "../gpu_ranks_util.h"
#include "mpi_test.h"
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

TEST(Trainer, DataParallelMatchesOneRankWithTheGlobalBatch) {
  if (world().size() < 2) GTEST_SKIP() << "needs at least 2 ranks";
  TrainConfig c = small_config();
  c.dtype = DType::f64;
  c.max_steps = 12;
  c.bucket_mb = 0.004;  // several buckets
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
}

}  // namespace
}  // namespace tide::test
