// The sync policy's two caps on host memory: max_queued_host_bytes bounds
// everything queued on CPU devices; max_streaming_host_bytes holds back only
// ops with small outputs (streaming ops), so that a loop of them reuses warm
// memory, while large outputs are free to run ahead.
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "test_util.h"

namespace tide::test {
namespace {

TEST(HostBytes, TheMemoryCapKeepsQueuedHostBytesUnderIt) {
  constexpr std::size_t kOpBytes = 4096;
  SyncPolicy p;
  p.max_queued_host_bytes = 10 * kOpBytes;
  EngineFixture e(EngineKind::async, 1, p);
  const Stats s = push_held_outputs(*e, std::vector<std::size_t>(200, kOpBytes), kNever).stats;
  EXPECT_LE(s.peak_queued_bytes, 10 * kOpBytes);
  EXPECT_GE(s.stalls_bytes, 1u);
}

TEST(HostBytes, TheStreamingCapHoldsSmallOutputs) {
  constexpr std::size_t kOpBytes = 4096;
  SyncPolicy p;
  p.max_streaming_host_bytes = 20 * kOpBytes;
  p.streaming_op_bytes = kOpBytes;
  EngineFixture e(EngineKind::async, 1, p);
  const Stats s = push_held_outputs(*e, std::vector<std::size_t>(200, kOpBytes), kNever).stats;
  EXPECT_LE(s.peak_queued_bytes, 20 * kOpBytes);
  EXPECT_GE(s.stalls_bytes, 1u);
}

TEST(HostBytes, LargeOutputsRunAheadOfTheStreamingCap) {
  // 16 KiB outputs are over the 8 KiB of a streaming op: 50 of them (800
  // KiB, ten times the streaming cap) queue behind a held op without a stall.
  SyncPolicy p;
  p.max_streaming_host_bytes = 80 << 10;
  p.streaming_op_bytes = 8 << 10;
  EngineFixture e(EngineKind::async, 1, p);
  const HeldRun r = push_held_outputs(*e, std::vector<std::size_t>(50, 16 << 10), kNever);
  EXPECT_EQ(r.stats.stalls_bytes, 0u);
  EXPECT_EQ(r.queued_at_release, 50u * (16 << 10));
}

TEST(HostBytes, SmallOutputsBehindLargeOnesAreNotHeld) {
  // 20 large outputs (320 KiB queued, four times the streaming cap) and then
  // 10 small ones (40 KiB of streaming bytes, under the cap): no stall, the
  // streaming cap counts streaming ops only.
  SyncPolicy p;
  p.max_streaming_host_bytes = 80 << 10;
  p.streaming_op_bytes = 8 << 10;
  EngineFixture e(EngineKind::async, 1, p);
  std::vector<std::size_t> sizes(20, 16 << 10);
  sizes.insert(sizes.end(), 10, 4 << 10);
  const HeldRun r = push_held_outputs(*e, sizes, kNever);
  EXPECT_EQ(r.stats.stalls_bytes, 0u);
  EXPECT_EQ(r.queued_at_release, 20u * (16 << 10) + 10u * (4 << 10));
}

TEST(HostBytes, DefaultsLetTheChaptersMatmulLoopRunAhead) {
  // 10 x (randn + matmul) of 1000 x 1000 f32: 20 outputs of 4 MB, each
  // larger than a streaming op's. Under the default policy none of it waits,
  // so the loop returns at once.
  if (SyncPolicy::default_max_queued_host_bytes() < 80'000'000)
    GTEST_SKIP() << "under 5 GB of memory and swap: the default cap is under the loop's 80 MB";
  EngineFixture e;
  const HeldRun r = push_held_outputs(*e, std::vector<std::size_t>(20, 4'000'000), kNever);
  EXPECT_EQ(r.stats.stalls, 0u);
  EXPECT_EQ(r.queued_at_release, 80'000'000u);
}

TEST(HostBytes, StallsOfEveryKindOnManyStreamsAllEnd) {
  // The workers wake a stalled frontend only once enough has completed: a
  // lost wake-up would hang here. 20,000 ops of random sizes (some larger
  // than a cap) on six streams of two devices, under small caps of every
  // kind; every stall must end, and the caps hold.
  SyncPolicy p;
  p.max_queued_ops = 64;
  p.max_queued_bytes = 512 << 10;
  p.max_queued_host_bytes = 256 << 10;
  p.max_streaming_host_bytes = 64 << 10;
  p.streaming_op_bytes = 8 << 10;
  EngineFixture e(EngineKind::async, 2, p);
  std::uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  std::uint64_t over_cap = 0, over_ops = 0;
  std::atomic<bool> burst_pushed{false};
  Engine* engine = &*e;
  for (int i = 0; i < 20000; ++i) {
    const std::size_t r = next() % 100;
    // One op in twenty comes in a burst of ops without outputs, which only
    // the cap on ops holds back. A burst goes to one stream, and its first
    // op holds that stream until the frontend stalls (or the burst is all
    // pushed), so the ops cap is reached however slow the pushes are.
    const bool burst = (i / 200) % 20 == 0;
    const bool burst_start = burst && i % 200 == 0;
    const std::size_t bytes =
        burst || r < 10 ? 0 : r < 60 ? 64 + next() % (8 << 10) : r < 98 ? next() % (64 << 10) : 300 << 10;
    const Device d = burst ? cpu(0) : cpu(static_cast<int>(next() % 2));
    const auto k = burst ? StreamKind::compute : static_cast<StreamKind>(next() % kStreamKinds);
    StorageList writes;
    if (bytes) writes.add(e->allocate(d, bytes));
    if (burst_start) {
      burst_pushed = false;
      push(*e, "burst", d, k, {}, std::move(writes), [engine, &burst_pushed](const OpContext&) {
        while (!burst_pushed.load() && !engine->stats().stalling) std::this_thread::yield();
      });
    } else {
      push(*e, "op", d, k, {}, std::move(writes), [](const OpContext&) {});
    }
    if (burst && i % 200 == 199) burst_pushed = true;
    // Every device is a CPU: all queued bytes are host bytes, held under
    // their cap, but for an op larger than it, which runs alone.
    const Stats now = e->stats();
    const std::uint64_t allowed = std::max<std::uint64_t>(p.max_queued_host_bytes, bytes);
    if (now.queued_bytes > allowed) over_cap = std::max(over_cap, now.queued_bytes - allowed);
    if (now.queued_ops > p.max_queued_ops) over_ops = std::max(over_ops, now.queued_ops - p.max_queued_ops);
  }
  e->wait_all();
  const Stats s = e->stats();
  EXPECT_EQ(over_cap, 0u) << "queued host bytes went this far over their cap after a push";
  EXPECT_EQ(over_ops, 0u) << "queued ops went this far over their cap after a push";
  EXPECT_GT(s.stalls_ops, 0u);
  EXPECT_GT(s.stalls_bytes, 0u);
  EXPECT_LE(s.peak_queued_ops, 64u);
  EXPECT_LE(s.peak_queued_bytes, p.max_queued_host_bytes > 300u << 10 ? p.max_queued_host_bytes : 300u << 10);
  EXPECT_EQ(s.queued_ops, 0u);
}

TEST(HostBytes, DefaultsAreBoundedAndUnboundedLiftsThem) {
  const SyncPolicy d;
  EXPECT_EQ(d.max_queued_host_bytes, SyncPolicy::default_max_queued_host_bytes());
  EXPECT_GT(d.max_queued_host_bytes, 0u);
  EXPECT_LE(d.max_queued_host_bytes, std::uint64_t{256} << 20);
  EXPECT_EQ(d.streaming_op_bytes, SyncPolicy::default_streaming_op_bytes());
  EXPECT_GE(d.streaming_op_bytes, std::uint64_t{256} << 10);
  EXPECT_LE(d.streaming_op_bytes, std::uint64_t{2} << 20);
  EXPECT_EQ(d.max_streaming_host_bytes, 2 * d.streaming_op_bytes);
  EXPECT_EQ(SyncPolicy::steps(2).max_streaming_host_bytes, d.max_streaming_host_bytes);
  EXPECT_EQ(SyncPolicy::unbounded().max_queued_host_bytes, 0u);
  EXPECT_EQ(SyncPolicy::unbounded().max_streaming_host_bytes, 0u);
  EXPECT_NE(d.str().find("queued host bytes"), std::string::npos);
  EXPECT_NE(d.str().find("streaming host bytes"), std::string::npos);
}

}  // namespace
}  // namespace tide::test
