// Stress test of the frontend -> worker queue: every item arrives, once, in
// order, across block boundaries, with a consumer that sleeps and wakes.
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
