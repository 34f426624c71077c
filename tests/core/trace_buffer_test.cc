// TraceBuffer: a stream's timeline, and on a GPU stream the rule that an
// event is handed out only once its op's device times are in.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "trace_buffer.h"

namespace tide {
namespace {

/// An event as a worker appends it: launch times, placed by `seq`.
TraceEvent launched(std::uint64_t seq) {
  TraceEvent e;
  e.op = "op";
  e.seq = seq;
  e.start_ns = static_cast<std::int64_t>(seq) * 1000;
  e.end_ns = e.start_ns + 10;  // a launch: short
  return e;
}

TEST(TraceBuffer, AHostStreamHandsOutEveryEventAtOnce) {
  TraceBuffer b;
  EXPECT_EQ(b.append(launched(1)), 0);
  EXPECT_EQ(b.append(launched(2)), 1);
  std::vector<TraceEvent> out;
  b.take(out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].seq, 2u);
  // Slots keep counting across takes.
  EXPECT_EQ(b.append(launched(3)), 2);
  std::uint64_t cursor = 0;
  std::vector<TraceEvent> read;
  b.read(cursor, read);
  ASSERT_EQ(read.size(), 1u) << "events taken before are not read again";
  EXPECT_EQ(read[0].seq, 3u);
  EXPECT_EQ(cursor, 3u);
}

TEST(TraceBuffer, AGpuStreamHoldsEventsUntilTheyAreSettled) {
  TraceBuffer b(/*settles=*/true);
  for (std::uint64_t s = 1; s <= 3; ++s) b.append(launched(s));
  std::vector<TraceEvent> out;
  b.take(out);
  EXPECT_TRUE(out.empty()) << "no event is final yet";
  std::uint64_t cursor = 0;
  b.read(cursor, out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(cursor, 0u);

  b.settle(0, /*retimed=*/true, 5000, 9000);
  b.take(out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].start_ns, 5000);
  EXPECT_EQ(out[0].end_ns, 9000);

  // Settling slot 2 settles slot 1 too (one completion thread, in order);
  // slot 1 keeps its launch times (not timed on the device).
  b.settle(2, true, 7000, 8000);
  out.clear();
  b.read(cursor, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].seq, 2u);
  EXPECT_EQ(out[0].start_ns, 2000);
  EXPECT_EQ(out[1].start_ns, 7000);
  EXPECT_EQ(cursor, 3u);
  // read() copies: take() still has them, and nothing more.
  out.clear();
  b.take(out);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_EQ(b.held(), 0u);
}

TEST(TraceBuffer, AFullBufferDropsAndCountsThenTakesAgainAfterATake) {
  TraceBuffer b(false, 2);
  EXPECT_EQ(b.append(launched(1)), 0);
  EXPECT_EQ(b.append(launched(2)), 1);
  EXPECT_EQ(b.append(launched(3)), -1);
  EXPECT_EQ(b.dropped(), 1u);
  std::vector<TraceEvent> out;
  b.take(out);
  EXPECT_EQ(b.append(launched(4)), 2);
  b.settle(-1, true, 0, 0);  // no slot: nothing happens
  EXPECT_EQ(b.held(), 1u);
}

TEST(TraceBuffer, AFullGpuStreamDropsWithoutASlotAndItsHeldEventsStillSettle) {
  TraceBuffer b(true, 2);
  EXPECT_EQ(b.append(launched(1)), 0);
  EXPECT_EQ(b.append(launched(2)), 1);
  EXPECT_EQ(b.append(launched(3)), -1);  // dropped: no slot, nothing to settle
  EXPECT_EQ(b.dropped(), 1u);
  b.settle(1, true, -5, -4);
  std::vector<TraceEvent> out;
  b.take(out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].start_ns, -5);
  EXPECT_EQ(b.append(launched(4)), 2) << "slots go on after the drop";
  b.take(out);
  EXPECT_EQ(out.size(), 2u) << "slot 2 is not settled";
}

// The three threads of a GPU stream at once: the worker appends, the
// completion thread settles in order (moving each event to "device" times),
// the frontend takes and reads. Every event must come out exactly once,
// and only with its device times.
TEST(TraceBuffer, ReadersNeverSeeALaunchTimeWhileTheStreamRuns) {
  constexpr std::uint64_t kOps = 20000;
  TraceBuffer b(true);
  std::atomic<std::int64_t> appended{-1};
  std::thread worker([&] {
    for (std::uint64_t s = 1; s <= kOps; ++s) appended.store(b.append(launched(s)), std::memory_order_release);
  });
  std::thread completion([&] {
    for (std::int64_t slot = 0; slot < static_cast<std::int64_t>(kOps); ++slot) {
      while (appended.load(std::memory_order_acquire) < slot) std::this_thread::yield();
      b.settle(slot, true, -slot, -slot + 1);  // device times: negative, unlike any launch
    }
  });
  std::vector<TraceEvent> taken, read;
  std::uint64_t cursor = 0;
  while (taken.size() < kOps) {
    b.read(cursor, read);  // read first: what take() removes is not read
    b.take(taken);
  }
  worker.join();
  completion.join();
  std::set<std::uint64_t> seen;
  for (const auto& e : taken) {
    EXPECT_LE(e.start_ns, 0) << "op " << e.seq << " handed out on its launch time";
    EXPECT_TRUE(seen.insert(e.seq).second) << "op " << e.seq << " twice";
  }
  EXPECT_EQ(seen.size(), kOps);
  // What read() copied: final events only, each once, in the stream's order.
  std::uint64_t last = 0;
  for (const auto& e : read) {
    EXPECT_LE(e.start_ns, 0) << "op " << e.seq << " read on its launch time";
    EXPECT_GT(e.seq, last) << "read out of order or twice";
    last = e.seq;
  }
}

}  // namespace
}  // namespace tide
