// AnchorClock: when a GPU clock takes anchors and how events are placed,
// with a simulated device behind ClockEvents and a simulated host clock
// (each read advances it 100 ns). The device runs at 1 + 50 ppm of the
// host's rate from its own origin; an event is done `latency` ns after it
// is recorded (0: an idle stream).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>

#include "anchor_clock.h"

namespace tide {
namespace {

std::int64_t g_now = 0;  // the simulated host clock (ns)
std::int64_t now_ns() { return g_now += 100; }

struct Device {
  double drift = 50e-6;
  double origin_ns = 123'456'789;  // the device clock's reading at host time 0
  std::int64_t latency_ns = 0;
  bool fail_record = false;
  int records = 0;
  double device_ns(double host_ns) const { return std::floor(origin_ns + host_ns * (1 + drift)); }
};

/// An event of the simulated device: when it ran on the host's clock.
struct Event {
  std::int64_t host_ns = 0;
};

class FakeEvents final : public ClockEvents {
 public:
  explicit FakeEvents(Device& d) : d_(d) {}
  bool record(std::size_t slot) override {
    if (d_.fail_record) return false;
    ++d_.records;
    slots_[slot] = Event{g_now + d_.latency_ns};
    return true;
  }
  State query(std::size_t slot) override { return g_now >= slots_[slot].host_ns ? State::done : State::not_yet; }
  bool elapsed_ms(std::size_t from, std::size_t to, float& ms) override {
    ms = as_ms(slots_[from], slots_[to]);
    return true;
  }
  bool elapsed_ms(std::size_t from, const void* event, float& ms) override {
    ms = as_ms(slots_[from], *static_cast<const Event*>(event));
    return true;
  }

 private:
  // As a GPU gives it: float milliseconds.
  float as_ms(const Event& a, const Event& b) const {
    return static_cast<float>((d_.device_ns(static_cast<double>(b.host_ns)) -
                               d_.device_ns(static_cast<double>(a.host_ns))) / 1e6);
  }
  Device& d_;
  Event slots_[ClockMap::kKeep];
};

struct AnchorClockTest : ::testing::Test {
  void SetUp() override { g_now = 1'000'000'000; }
  AnchorClock make() { return AnchorClock(std::make_unique<FakeEvents>(dev), now_ns); }
  Device dev;
};

TEST_F(AnchorClockTest, AnIdleDeviceAnchorsAtOnceAndRenewsOncePerSecond) {
  AnchorClock clock = make();
  std::uint64_t k = 99;
  ASSERT_TRUE(clock.current(k));
  EXPECT_EQ(k, 0u);
  g_now += AnchorClock::kRenewNs / 2;
  ASSERT_TRUE(clock.current(k));
  EXPECT_EQ(k, 0u) << "renewed before its second";
  g_now += AnchorClock::kRenewNs;
  ASSERT_TRUE(clock.current(k));
  EXPECT_EQ(k, 1u);
  EXPECT_EQ(dev.records, 2);
  const AnchorClock::Report r = clock.report();
  EXPECT_EQ(r.anchors, 2u);
  EXPECT_EQ(r.readings_used, 2u);
  EXPECT_EQ(r.link_failures, 0u);
}

TEST_F(AnchorClockTest, TheFirstAnchorWaitsForAUsableReadingThenIsTakenAnyway) {
  // A busy device: every anchor is done 1 ms after it is recorded, past the
  // spin, so its reading is too wide.
  dev.latency_ns = 1'000'000;
  AnchorClock clock = make();
  std::uint64_t k = 0;
  int first_true = -1;
  for (int call = 0; call < 2 * AnchorClock::kFirstTries && first_true < 0; ++call) {
    if (clock.current(k)) first_true = call;
    g_now += AnchorClock::kFirstRetryNs + 1'000'000;
  }
  // Each call finishes the previous try (refused) and records the next;
  // the kFirstTries-th finished try is taken.
  EXPECT_EQ(first_true, AnchorClock::kFirstTries);
  EXPECT_EQ(k, 0u);
  EXPECT_EQ(dev.records, AnchorClock::kFirstTries);
}

TEST_F(AnchorClockTest, EventsLandWhereTheyRanOnTheHostsClock) {
  AnchorClock clock = make();
  std::uint64_t k = 0;
  double first = 0, last = 0;
  for (int second = 0; second < 20; ++second) {
    ASSERT_TRUE(clock.current(k));
    EXPECT_EQ(k, static_cast<std::uint64_t>(second)) << "one anchor a second";
    // An op recorded now with anchor k current, which runs 2 ms to 3 ms
    // from now, its events read once it is done.
    const Event begin{g_now + 2'000'000}, end{g_now + 3'000'000};
    std::int64_t start_ns = 0, end_ns = 0;
    g_now += 4'000'000;
    ASSERT_TRUE(clock.place(k, &begin, &end, start_ns, end_ns));
    EXPECT_LT(start_ns, end_ns);
    const double err = std::max(std::abs(static_cast<double>(start_ns - begin.host_ns)),
                                std::abs(static_cast<double>(end_ns - end.host_ns)));
    if (second == 0) first = err;
    last = err;
    g_now += AnchorClock::kRenewNs;
  }
  // Near the first anchor, offsets are short: the drift has no time to
  // show. A second later the map has not measured the rate yet, so an event
  // is off by about the drift of that second (50 us), and the bend toward
  // each new reading takes it back (ClockMap's own tests hold it for hours).
  EXPECT_LT(first, 1'000.0) << "ns from where the events ran";
  EXPECT_LT(last, 1'000.0) << "ns from where the events ran";
}

TEST_F(AnchorClockTest, AnEventTimedAgainstAReusedSlotIsNotPlaced) {
  AnchorClock clock = make();
  std::uint64_t k = 0;
  for (std::size_t i = 0; i <= ClockMap::kKeep; ++i) {
    ASSERT_TRUE(clock.current(k));
    g_now += AnchorClock::kRenewNs + 1'000'000;  // the mapped anchor may be a little later than its reading
  }
  EXPECT_EQ(k, ClockMap::kKeep);
  const Event begin{g_now}, end{g_now + 1000};
  g_now += 10'000;
  std::int64_t s = 0, e = 0;
  EXPECT_FALSE(clock.place(0, &begin, &end, s, e)) << "anchor 0's slot now holds anchor kKeep";
  EXPECT_TRUE(clock.place(k, &begin, &end, s, e));
}

TEST_F(AnchorClockTest, AFailedRecordLeavesNoAnchorAndIsTriedAgain) {
  dev.fail_record = true;
  AnchorClock clock = make();
  std::uint64_t k = 0;
  EXPECT_FALSE(clock.current(k));
  dev.fail_record = false;
  EXPECT_FALSE(clock.current(k)) << "tried again before kFirstRetryNs";
  g_now += AnchorClock::kFirstRetryNs;
  EXPECT_TRUE(clock.current(k));
  EXPECT_EQ(k, 0u);
}

}  // namespace
}  // namespace tide
