// ClockMap: a GPU's event clock placed on the host's steady clock, for the
// timeline (internal to core; no CUDA here, so it is tested on any machine).
//
// A device gives the time between two of its events, as float
// milliseconds: 2^-24 of the interval, so one anchor for a whole run loses
// resolution as the run goes on (31 us after 4 minutes). Anchors are
// therefore renewed (about once a second while tracing; when and how is
// AnchorClock's policy, anchor_clock.h): each is an event
// recorded on an idle stream and waited for, with the host's clock read
// just before the record and just after the wait. Every event is timed
// against a recent anchor, so its offset stays short and precise.
//
// The anchors chain on the device's clock: an anchor's device time is the
// previous one's plus the device's interval between them. Host times come
// from one mapping of device time, continuous and increasing, so events
// keep the order the device ran them in whichever anchor timed them. The
// mapping follows the host's clock: each segment runs at the host/device
// rate measured over the whole run and, for its first kSettleNs, bends
// toward the latest host reading (the middle of its before/after window),
// so drift between the two clocks does not accumulate and one late
// reading does not jump the timeline. A reading whose window is wider than
// kMaxWindowNs (the host thread was descheduled) is not used.
//
// An event is timed against the anchor current when its op was recorded,
// then against each later anchor it may follow (place()): offsets stay
// short however long the op waited, and an event is always placed from
// the newest anchor before it on the device. The device's float rounding
// is monotone, so an event before anchor j + 1 lands at or before it and
// one after lands at or after it: the order holds across anchors to the
// nanosecond.
#pragma once

#include <cmath>
#include <cstdint>
#include <deque>

namespace tide {

class ClockMap {
 public:
  static constexpr std::size_t kKeep = 64;  // anchors kept
  static constexpr double kSettleNs = 2e9;
  static constexpr double kRateBaselineNs = 1e9;  // the rate is measured once the run is this long
  static constexpr std::int64_t kMaxWindowNs = 200'000;
  static constexpr double kMaxRateError = 1e-3;  // a rate or a bend beyond 1000 ppm is not believed
  static constexpr double kMarginNs = 1000;  // beyond the device's rounding, when choosing an anchor

  /// Adds an anchor and returns its index (0, 1, ...). `since_previous_ns`
  /// is the device's time from the previous anchor to this one (ignored
  /// for the first); `before_ns`/`after_ns` are the host's clock just
  /// before recording it and just after seeing it done.
  std::uint64_t add(double since_previous_ns, std::int64_t before_ns, std::int64_t after_ns);

  /// The host time of the device instant `offset_ns` after anchor `k`;
  /// false when `k` is not kept (or not made yet).
  bool to_host(std::uint64_t k, double offset_ns, std::int64_t& host_ns) const;

  /// The host time of a device event whose op was recorded with anchor
  /// `k` current. `elapsed(j, ns)` gives the device's time from anchor j
  /// to the event (negative, or 0, when the event came first; false when
  /// it cannot). The event is placed from the newest kept anchor that it
  /// does not precede.
  template <typename Elapsed>
  bool place(std::uint64_t k, Elapsed&& elapsed, std::int64_t& host_ns) const {
    double off = 0;
    if (points_.empty() || k < first_ || k > newest() || !elapsed(k, off)) return false;
    while (k < newest()) {
      const double link = points_[k + 1 - first_].device_ns - points_[k - first_].device_ns;
      // Surely before the next anchor (rounding is 2^-24 of each interval):
      // not worth asking. Order does not rest on this, nor on `next < 0`
      // below: an event placed from k + 1 with a small negative offset
      // lands where it would from k.
      if (off < link - kMarginNs - (off + link) * 0x1p-23) break;
      double next = 0;
      if (!elapsed(k + 1, next) || next < 0) break;
      ++k;
      off = next;
    }
    return to_host(k, off, host_ns);
  }

  bool empty() const { return points_.empty(); }
  /// Index of the newest anchor (valid when not empty) and of the oldest kept.
  std::uint64_t newest() const { return first_ + points_.size() - 1; }
  std::uint64_t oldest() const { return first_; }
  /// The host time the newest anchor was placed at.
  std::int64_t newest_host_ns() const { return points_.empty() ? 0 : base_ + std::llround(points_.back().host_ns); }
  /// The newest usable reading minus where the mapping put that anchor,
  /// and the largest such distance seen (how well the map follows the host).
  double last_residual_ns() const { return residual_; }
  double max_residual_ns() const { return max_residual_; }
  /// Anchors made, and readings used or ignored (too wide) among them.
  std::uint64_t anchors() const { return points_.empty() ? 0 : newest() + 1; }
  std::uint64_t readings_used() const { return used_; }
  std::uint64_t readings_ignored() const { return ignored_; }

 private:
  struct Point {
    double device_ns;     // on the device's clock, from the first anchor
    double host_ns;       // where the mapping puts it, from base_ (whole nanoseconds stay exact)
    double rate;          // host ns per device ns after it
    double bend;          // extra host ns per device ns over its first kSettleNs
  };
  double map(const Point& p, double device_ns) const;

  std::deque<Point> points_;
  std::uint64_t first_ = 0;  // index of points_.front()
  std::int64_t base_ = 0;    // the host's clock at the first anchor: host times are kept from it
  bool have_reference_ = false;
  double ref_device_ = 0, ref_host_ = 0;  // the first usable reading, for the rate
  double residual_ = 0, max_residual_ = 0;
  std::uint64_t used_ = 0, ignored_ = 0;
};

}  // namespace tide
