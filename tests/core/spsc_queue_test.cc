// Stress test of the frontend -> worker queue: every item arrives, once, in
// order, across block boundaries, with a consumer that sleeps and wakes,
// pushed one at a time or put in runs and published together.
#include <chrono>
#include <cstdint>
#include <thread>

#include <gtest/gtest.h>

#include "spsc_queue.h"

namespace tide {
namespace {

TEST(SpscQueue, DeliversEveryItemInOrder) {
  constexpr std::uint64_t kItems = 2'000'000;
  SpscQueue<std::uint64_t, 64> q;  // small blocks: many block hand-overs
  std::uint64_t errors = 0, sum = 0;
  std::thread consumer([&] {
    for (std::uint64_t i = 1; i <= kItems; ++i) {
      std::uint64_t v = q.pop();
      if (v != i) ++errors;
      sum += v;
    }
  });
  for (std::uint64_t i = 1; i <= kItems; ++i) q.push(i);
  consumer.join();
  EXPECT_EQ(errors, 0u);
  EXPECT_EQ(sum, kItems * (kItems + 1) / 2);
  std::uint64_t extra = 0;
  EXPECT_FALSE(q.try_pop(extra));
}

TEST(SpscQueue, WakesASleepingConsumer) {
  // Bursts with pauses in between, so the consumer goes to sleep and must be
  // woken by a later push; a lost wake-up would hang (ctest's timeout).
  SpscQueue<int, 8> q;
  std::thread consumer([&] {
    for (int burst = 0; burst < 50; ++burst)
      for (int i = 0; i < 3; ++i) EXPECT_EQ(q.pop(), burst * 3 + i);
  });
  for (int burst = 0; burst < 50; ++burst) {
    for (int i = 0; i < 3; ++i) q.push(burst * 3 + i);
    std::this_thread::sleep_for(std::chrono::microseconds(burst % 5 == 0 ? 2000 : 10));
  }
  consumer.join();
}

TEST(SpscQueue, APollingConsumerTakesItemsPushedWithinAndAfterItsPoll) {
  // A poll of 500 us: pushes 10 us apart land while it polls, pushes 3 ms
  // apart after it went to sleep; all must arrive, in order.
  SpscQueue<int, 8> q;
  q.set_poll(std::chrono::microseconds(500));
  std::thread consumer([&] {
    for (int i = 0; i < 60; ++i) EXPECT_EQ(q.pop(), i);
  });
  for (int i = 0; i < 60; ++i) {
    q.push(i);
    std::this_thread::sleep_for(std::chrono::microseconds(i % 10 == 0 ? 3000 : 10));
  }
  consumer.join();
}

TEST(SpscQueue, ItemsPutAreHandedOverTogetherAtPublish) {
  SpscQueue<int, 4> q;  // a run crosses blocks
  for (int i = 0; i < 10; ++i) q.put(i);
  int v = -1;
  EXPECT_FALSE(q.try_pop(v)) << "an item put and not published was taken";
  q.publish();
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(q.try_pop(v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(q.try_pop(v));
}

TEST(SpscQueue, RunsPublishedAtOnceReachASleepingConsumerInOrder) {
  // Runs of 1 to 40 items (as a GPU stream's worker hands a run of launched
  // ops to its completion thread), some after pauses long enough for the
  // consumer to sleep: a lost wake-up would hang (ctest's timeout).
  constexpr int kRuns = 400;
  SpscQueue<int, 8> q;
  q.set_poll(std::chrono::microseconds(50));
  int total = 0;
  for (int r = 0; r < kRuns; ++r) total += 1 + (r * 7) % 40;
  std::thread consumer([&] {
    for (int i = 0; i < total; ++i) EXPECT_EQ(q.pop(), i);
  });
  int next = 0;
  for (int r = 0; r < kRuns; ++r) {
    for (int k = 0; k < 1 + (r * 7) % 40; ++k) q.put(next++);
    q.publish();
    if (r % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  consumer.join();
}

TEST(SpscQueue, TryPopOnEmpty) {
  SpscQueue<int> q;
  int v = 0;
  EXPECT_FALSE(q.try_pop(v));
  q.push(7);
  EXPECT_TRUE(q.try_pop(v));
  EXPECT_EQ(v, 7);
  EXPECT_FALSE(q.try_pop(v));
}

}  // namespace
}  // namespace tide
