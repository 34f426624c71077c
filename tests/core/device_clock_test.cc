// ClockMap: a simulated device whose clock drifts from the host's, read
// through float milliseconds as a GPU gives them, with anchors read on the
// host with jitter. The map must follow the host's clock for hours, keep
// the device's order across anchors, and ignore a descheduled reading.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "device_clock.h"

namespace tide {
namespace {

/// The simulated world: host time t (ns) and a device clock running at
/// 1 + drift of it; intervals come back as float milliseconds.
struct World {
  double drift = 0;
  std::mt19937_64 rng{7};
  ClockMap map;
  std::vector<double> anchor_t;  // host time each anchor ran at

  // The device's timestamps are whole nanoseconds.
  double device(double t) const { return std::floor(t * (1 + drift)); }
  static double as_float_ms(double ns) { return static_cast<double>(static_cast<float>(ns / 1e6)) * 1e6; }

  /// An anchor that runs at host time t; the host reads its clock between
  /// 0.5 and 5 us before and after it (or `late` ns after, if given).
  std::uint64_t anchor(double t, double late = 0) {
    std::uniform_real_distribution<double> jitter(500, 5000);
    const auto before = static_cast<std::int64_t>(t - jitter(rng));
    const auto after = static_cast<std::int64_t>(t + (late > 0 ? late : jitter(rng)));
    const double since = anchor_t.empty() ? 0 : as_float_ms(device(t) - device(anchor_t.back()));
    anchor_t.push_back(t);
    return map.add(since, before, after);
  }
  /// Where the map puts an event that ran at host time t, timed against anchor k.
  double place(std::uint64_t k, double t) {
    std::int64_t h = 0;
    EXPECT_TRUE(map.to_host(k, as_float_ms(device(t) - device(anchor_t[k])), h));
    return static_cast<double>(h);
  }
  /// Where ClockMap::place puts an event that ran at host time t, its op
  /// recorded with anchor k current. `clamped`: the device answers 0, not
  /// a negative time, for an event before the anchor.
  double place_best(std::uint64_t k, double t, bool clamped = false) {
    auto elapsed = [&](std::uint64_t j, double& ns) {
      ns = as_float_ms(device(t) - device(anchor_t[j]));
      if (clamped && ns < 0) ns = 0;
      return true;
    };
    std::int64_t h = 0;
    EXPECT_TRUE(map.place(k, elapsed, h));
    return static_cast<double>(h);
  }
};

constexpr double kS = 1e9;

// Two hours of tracing with the device's clock 50 ppm off the host's, both
// ways: from the fifth second on, every event lands within 10 us of when it
// ran (about 2 us once the rate is known: the readings' jitter). A chain
// without the measured rate and the bend toward the readings is 50 us off
// after one second; a single anchor, 360 ms after two hours.
TEST(ClockMap, FollowsTheHostForHoursThroughDriftAndJitter) {
  for (double drift : {50e-6, -50e-6, 0.0}) {
    World w;
    w.drift = drift;
    std::uniform_real_distribution<double> within(0, 1.5 * kS);
    double worst = 0;
    const double t0 = 1000 * kS;
    for (int i = 0; i <= 7200; ++i) {
      const double t = t0 + i * kS;
      const std::uint64_t k = w.anchor(t);
      for (int j = 0; j < 4; ++j) {
        const double te = t + within(w.rng);  // may run after the next anchor: still timed against k
        if (i >= 5) worst = std::max(worst, std::abs(w.place(k, te) - te));
      }
    }
    EXPECT_LT(worst, 10'000) << "drift " << drift << ": worst placement " << worst << " ns";
  }
}

// Events 1 us apart on the device, around anchor changes, some timed
// against the anchor before (an op recorded just before a new anchor and
// run after it): the host times keep the device's order.
TEST(ClockMap, KeepsTheDevicesOrderAcrossAnchors) {
  World w;
  w.drift = 80e-6;
  const double t0 = 50 * kS;
  std::uint64_t k = 0;
  for (int i = 0; i < 400; ++i) {
    const double t = t0 + i * kS;
    const std::uint64_t prev = k;
    // A late reading now and then (still within the usable window) bends the map.
    k = w.anchor(t, i % 7 == 3 ? 150'000 : 0);
    if (i == 0) continue;
    double last = -1;
    for (int j = -200; j < 200; ++j) {
      const double te = t + j * 1000.0;
      // Before the anchor: the previous one; after it: either.
      const std::uint64_t by = (j < 0 || j % 2) ? prev : k;
      const double h = w.place(by, te);
      ASSERT_GT(h, last) << "anchor " << i << ", event " << j << " us from it";
      last = h;
    }
  }
}

// The mapping itself is increasing everywhere, bends included.
TEST(ClockMap, IsIncreasingEverywhere) {
  World w;
  w.drift = -900e-6;  // close to the largest rate believed
  for (int i = 0; i < 120; ++i) w.anchor(7 * kS + i * 0.5 * kS, i % 5 == 0 ? 190'000 : 0);
  std::int64_t last = INT64_MIN;
  for (std::uint64_t k = w.map.oldest(); k <= w.map.newest(); ++k)
    for (double x = 0; x < 0.6 * kS; x += 0.01 * kS) {
      std::int64_t h = 0;
      ASSERT_TRUE(w.map.to_host(k, x, h));
      if (x < 0.5 * kS) {  // within this anchor's segment: after every earlier one
        ASSERT_GE(h, last) << "anchor " << k << " + " << x << " ns";
        last = h;
      }
    }
}

// A reading taken by a descheduled thread (its window is 20 ms wide) says
// nothing: the timeline does not move toward it.
TEST(ClockMap, ADescheduledReadingIsNotUsed) {
  World w;
  w.drift = 20e-6;
  const double t0 = 3 * kS;
  double worst = 0;
  for (int i = 0; i < 200; ++i) {
    const double t = t0 + i * kS;
    const std::uint64_t k = w.anchor(t, i == 100 ? 20e6 : 0);
    if (i >= 60) worst = std::max(worst, std::abs(w.place(k, t + 0.7 * kS) - (t + 0.7 * kS)));
  }
  EXPECT_LT(worst, 10'000) << worst << " ns";
  // What the trace file reports of the clock.
  EXPECT_EQ(w.map.anchors(), 200u);
  EXPECT_EQ(w.map.readings_ignored(), 1u);
  EXPECT_EQ(w.map.readings_used(), 199u);
  // The largest is at the second anchor, before the rate is known: 20 us
  // for a clock 20 ppm off.
  EXPECT_LT(w.map.max_residual_ns(), 25'000);
  EXPECT_GT(w.map.max_residual_ns(), 15'000);
  EXPECT_LT(std::abs(w.map.last_residual_ns()), 10'000);
}

// After an idle hour (no anchor), the first events are placed within a
// millisecond and the map is back within 10 us half a minute later.
TEST(ClockMap, AnIdleHourIsCaughtUpWithoutOvershoot) {
  World w;
  w.drift = 50e-6;
  for (int i = 0; i < 60; ++i) w.anchor(kS + i * kS);
  const double back = 3700 * kS;
  double first = 0, later = 0;
  for (int i = 0; i < 60; ++i) {
    const double t = back + i * kS;
    const std::uint64_t k = w.anchor(t);
    const double err = std::abs(w.place(k, t + 0.5 * kS) - (t + 0.5 * kS));
    if (i == 0) first = err;
    if (i >= 30) later = std::max(later, err);
  }
  EXPECT_LT(first, 1e6);
  EXPECT_LT(later, 10'000);
}

// Two events a few nanoseconds apart on the device, around each anchor
// renewal, the first one's op recorded with the previous anchor current
// (it was launched before the renewal and ran after it), the second's
// with either: the map keeps their order, to the nanosecond, whether the
// device answers a negative time or 0 for an event before an anchor. And
// an op that waited 50 s after its anchor (a collective held up by a peer)
// is placed as precisely as one that did not.
TEST(ClockMap, PlacesFromTheNewestAnchorBeforeTheEventKeepingOrderToTheNanosecond) {
  for (bool clamped : {false, true}) {
    World w;
    w.drift = 37e-6;
    const double t0 = 20 * kS;
    int pairs = 0;
    for (int i = 0; i < 120; ++i) {
      const double t = t0 + i * 1.000'000'3 * kS;  // not on a whole nanosecond
      w.anchor(t);
      if (i == 0) continue;
      const std::uint64_t k = w.map.newest();
      for (double a = t - 300; a < t + 300; a += 7) {
        for (double gap : {0.0, 1.0, 8.0, 16.0, 32.0, 64.0}) {
          const double b = a + gap;
          const double pa = w.place_best(k - 1, a, clamped);
          const double pb = w.place_best(b >= t ? k : k - 1, b, clamped);
          ASSERT_LE(pa, pb) << (clamped ? "clamped" : "signed") << ": events " << gap << " ns apart, "
                            << a - t << " ns from anchor " << k;
          ++pairs;
        }
      }
      if (i >= 60) {
        // 50 s in flight: timed first against the anchor of 50 s ago.
        const double late = t + 0.4 * kS;
        const double p_old = w.place_best(k - 50, late, clamped);
        const double p_new = w.place_best(k, late + 16, clamped);
        ASSERT_LE(p_old, p_new) << "a late op's end and the next op's start, 16 ns apart";
        EXPECT_LT(std::abs(p_old - late), 10'000);
      }
    }
    EXPECT_GT(pairs, 10'000);
  }
}

// A host up for a year (steady_clock counts from boot): whole nanoseconds
// stay exact.
TEST(ClockMap, KeepsWholeNanosecondsAfterAYearOfUptime) {
  ClockMap m;
  const std::int64_t year = 365LL * 24 * 3600 * 1'000'000'000;
  for (int i = 0; i < 10; ++i) m.add(1e9, year + i * 1'000'000'000LL, year + i * 1'000'000'000LL);
  std::int64_t h = 0;
  ASSERT_TRUE(m.to_host(9, 251, h));
  EXPECT_EQ(h, year + 9'000'000'251LL);
  EXPECT_EQ(m.newest_host_ns(), year + 9'000'000'000LL);
}

// An event placed while the next anchor is not on the map yet (it ran
// before that anchor: the device had not passed it) keeps its place once
// the anchor is added, so it stays before every event placed after.
TEST(ClockMap, AnEventPlacedBeforeAnAnchorIsAddedStaysBeforeIt) {
  World w;
  w.drift = 60e-6;
  for (int i = 0; i < 30; ++i) w.anchor(kS + i * 0.8 * kS, i % 4 == 1 ? 150'000 : 0);
  const std::uint64_t k = w.map.newest();
  const double t_next = kS + 30 * 0.8 * kS;
  const double a = t_next - 5;  // placed now, 5 ns before the coming anchor
  const double pa = w.place_best(k, a);
  w.anchor(t_next, 190'000);
  EXPECT_EQ(w.place_best(k, a), pa) << "the map moved under an event already placed";
  EXPECT_LE(pa, w.place_best(k + 1, t_next));
  EXPECT_LE(pa, w.place_best(k, t_next + 3));
}

TEST(ClockMap, KeepsTheLast64Anchors) {
  ClockMap m;
  std::int64_t h = 0;
  EXPECT_FALSE(m.to_host(0, 0, h)) << "no anchor yet";
  for (int i = 0; i < 100; ++i) m.add(1e9, i * 1'000'000'000LL, i * 1'000'000'000LL + 1000);
  EXPECT_EQ(m.newest(), 99u);
  EXPECT_EQ(m.oldest(), 100u - ClockMap::kKeep);
  EXPECT_FALSE(m.to_host(m.oldest() - 1, 0, h));
  EXPECT_FALSE(m.to_host(100, 0, h));
  ASSERT_TRUE(m.to_host(99, 250, h));
  EXPECT_NEAR(static_cast<double>(h), 99e9 + 500 + 250, 2);
}

}  // namespace
}  // namespace tide
