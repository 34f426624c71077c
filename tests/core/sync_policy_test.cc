// The sync policy bounds how far the frontend runs ahead; without one, the
// frontend runs far ahead (so the gate, not something else, is the bound).
#include <latch>
#include <thread>
#include <vector>

#include "test_util.h"

namespace tide::test {
namespace {

// Each step pushes one slow op on two streams; a step is complete when both
// have run. Right after step() returns, steps in flight = begun - complete.
struct StepProbe {
  std::vector<std::atomic<int>> done_per_step;
  std::atomic<int> complete_steps{0};
  explicit StepProbe(int steps) : done_per_step(static_cast<std::size_t>(steps)) {}
};

std::uint64_t run_steps(Engine& e, int steps, int op_us, StepProbe& probe) {
  std::uint64_t max_inflight = 0;
  for (int s = 0; s < steps; ++s) {
    auto step = e.step();
    std::uint64_t inflight = static_cast<std::uint64_t>(s + 1 - probe.complete_steps.load());
    max_inflight = std::max(max_inflight, inflight);
    for (auto kind : {StreamKind::compute, StreamKind::copy})
      push(e, "slow", cpu(0), kind, {}, {}, [&probe, s, op_us](const OpContext&) {
        busy_us(op_us);
        if (probe.done_per_step[static_cast<std::size_t>(s)].fetch_add(1) == 1) probe.complete_steps.fetch_add(1);
      });
  }
  e.wait_all();
  return max_inflight;
}

class InflightSteps : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(InflightSteps, NeverExceedK) {
  const std::uint32_t k = GetParam();
  EngineFixture e(EngineKind::async, 1, SyncPolicy::steps(k));
  StepProbe probe(40);
  std::uint64_t max_inflight = run_steps(*e, 40, 1000, probe);
  EXPECT_LE(max_inflight, k);
  Stats s = e->stats();
  EXPECT_LE(s.peak_inflight_steps, k);
  EXPECT_EQ(s.steps_begun, 40u);
  // Ops of 1 ms against a frontend that pushes in microseconds: the gate
  // must have held the frontend back.
  EXPECT_GT(s.stalls_steps, 0u);
}

INSTANTIATE_TEST_SUITE_P(K, InflightSteps, ::testing::Values(1u, 2u, 4u));

TEST(InflightStepsUnbounded, RunAhead) {
  EngineFixture e(EngineKind::async, 1);
  StepProbe probe(40);
  std::uint64_t max_inflight = run_steps(*e, 40, 1000, probe);
  EXPECT_GT(max_inflight, 4u) << "without a policy the frontend should run ahead";
  EXPECT_EQ(e->stats().stalls, 0u);
}

// Without a cap the peak is measured all the same: 50 steps queued behind
// an op that holds the stream are 50 steps in flight.
TEST(InflightStepsUnbounded, PeakIsMeasuredWithoutACap) {
  EngineFixture e(EngineKind::async, 1);
  std::latch release(1);
  for (int s = 0; s < 50; ++s) {
    auto step = e->step();
    push(*e, "held", cpu(0), StreamKind::compute, {}, {}, [&release, s](const OpContext&) {
      if (s == 0) release.wait();
    });
  }
  EXPECT_EQ(e->stats().peak_inflight_steps, 50u);
  release.count_down();
  e->wait_all();
  // Once they have run, a new step is the only one in flight.
  e->reset_stats();
  { auto step = e->step(); }
  EXPECT_EQ(e->stats().peak_inflight_steps, 1u);
}

TEST(InflightStepsUnbounded, TheNaiveEngineHasOneStepInFlight) {
  EngineFixture e(EngineKind::naive, 1);
  for (int s = 0; s < 3; ++s) {
    auto step = e->step();
    push(*e, "op", cpu(0), StreamKind::compute, {}, {}, [](const OpContext&) {});
  }
  EXPECT_EQ(e->stats().peak_inflight_steps, 1u);
}

TEST(QueuedBytes, KStepsHoldAtMostKPlusOneStepsOfBytes) {
  constexpr std::uint32_t k = 2;
  constexpr int kOpsPerStep = 4;
  constexpr std::size_t kBytesPerOp = 1 << 16;
  EngineFixture e(EngineKind::async, 1, SyncPolicy::steps(k));
  std::vector<std::shared_ptr<Storage>> keep;
  for (int s = 0; s < 30; ++s) {
    auto step = e->step();
    for (int i = 0; i < kOpsPerStep; ++i) {
      auto out = e->allocate(cpu(0), kBytesPerOp);
      push(*e, "alloc", cpu(0), StreamKind::compute, {}, {out}, [](const OpContext&) { busy_us(200); });
    }
  }
  e->wait_all();
  EXPECT_LE(e->stats().peak_queued_bytes, (k + 1) * kOpsPerStep * kBytesPerOp);
  EXPECT_GT(e->stats().peak_queued_bytes, 0u);
}

TEST(QueuedOps, WithoutAPolicyAHundredThousandPushesRunAhead) {
  EngineFixture e;
  std::latch hold(1);
  push(*e, "held", cpu(0), StreamKind::compute, {}, {}, [&](const OpContext&) { hold.wait(); });
  for (int i = 0; i < 100000; ++i) push(*e, "tiny", cpu(0), StreamKind::compute, {}, {}, [](const OpContext&) {});
  Stats s = e->stats();
  EXPECT_EQ(s.queued_ops, 100001u) << "every push returned while the backend was held";
  EXPECT_EQ(s.stalls, 0u);
  hold.count_down();
  e->wait_all();
  EXPECT_EQ(e->stats().queued_ops, 0u);
}

// The backend is held until the frontend has filled the queue to `cap`; a
// helper thread releases it once it sees that, so the frontend must have
// blocked at the cap (or the test would hang: ctest's timeout catches that).
TEST(QueuedOps, CapBlocksTheFrontendAtTheHighWaterMark) {
  SyncPolicy p;
  p.max_queued_ops = 1000;
  p.low_water = 0.25;
  EngineFixture e(EngineKind::async, 1, p);
  std::latch hold(1);
  push(*e, "held", cpu(0), StreamKind::compute, {}, {}, [&](const OpContext&) { hold.wait(); });
  std::thread releaser([&] {
    while (e->stats().queued_ops < 1000) std::this_thread::yield();
    hold.count_down();
  });
  for (int i = 0; i < 5000; ++i) push(*e, "tiny", cpu(0), StreamKind::compute, {}, {}, [](const OpContext&) {});
  e->wait_all();
  releaser.join();
  Stats s = e->stats();
  EXPECT_LE(s.peak_queued_ops, 1000u);
  EXPECT_GE(s.stalls_ops, 1u);
  EXPECT_GT(s.stalled_ns, 0);
}

// max_unlaunched_gpu_ops holds only GPU streams: a CPU stream's backlog
// behind a held op passes it freely (CudaEngine tests the GPU side).
TEST(QueuedOps, TheUnlaunchedGpuOpsCapDoesNotHoldCpuStreams) {
  SyncPolicy p;
  p.max_unlaunched_gpu_ops = 1;
  EngineFixture e(EngineKind::async, 1, p);
  std::latch hold(1);
  push(*e, "held", cpu(0), StreamKind::compute, {}, {}, [&](const OpContext&) { hold.wait(); });
  for (int i = 0; i < 100; ++i) push(*e, "tiny", cpu(0), StreamKind::compute, {}, {}, [](const OpContext&) {});
  EXPECT_EQ(e->stats().queued_ops, 101u) << "every push returned while the backend was held";
  EXPECT_EQ(e->stats().stalls, 0u);
  hold.count_down();
  e->wait_all();
}

TEST(QueuedBytes, CapKeepsQueuedBytesUnderIt) {
  constexpr std::size_t kOpBytes = 4096;
  SyncPolicy p;
  p.max_queued_bytes = 10 * kOpBytes;
  EngineFixture e(EngineKind::async, 1, p);
  const Stats s = push_held_outputs(*e, std::vector<std::size_t>(200, kOpBytes), kNever).stats;
  EXPECT_LE(s.peak_queued_bytes, 10 * kOpBytes);
  EXPECT_GE(s.stalls_bytes, 1u);
  EXPECT_EQ(s.queued_bytes, 0u);
}

TEST(QueuedBytes, AnOpLargerThanTheCapStillRuns) {
  SyncPolicy p;
  p.max_queued_bytes = 1024;
  EngineFixture e(EngineKind::async, 1, p);
  for (int i = 0; i < 5; ++i) {
    auto out = e->allocate(cpu(0), 1 << 20);
    push(*e, "big", cpu(0), StreamKind::compute, {}, {out}, [](const OpContext&) {});
  }
  e->wait_all();
  EXPECT_LE(e->stats().peak_queued_bytes, std::uint64_t{1} << 20);
}

TEST(Policy, InvalidPoliciesAreRejected) {
  EngineFixture e;
  SyncPolicy bad;
  bad.low_water = 0.0;
  EXPECT_THROW(e->set_policy(bad), PolicyError);
  bad.low_water = 1.5;
  EXPECT_THROW(e->set_policy(bad), PolicyError);
  bad.low_water = 0.5;
  bad.max_inflight_steps = 1u << 30;
  EXPECT_THROW(e->set_policy(bad), PolicyError);
  EXPECT_EQ(e->policy().max_inflight_steps, 0u) << "a rejected policy changes nothing";
  EngineOptions o;
  o.policy.low_water = -1;
  EXPECT_THROW(Engine::create(o), PolicyError);
}

TEST(Policy, StepsDoNotNest) {
  EngineFixture e;
  auto s1 = e->step();
  EXPECT_THROW(e->step(), UsageError);
}

}  // namespace
}  // namespace tide::test
