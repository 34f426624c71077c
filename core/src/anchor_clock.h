// AnchorClock: when a GPU's clock takes anchors and how an event is timed
// against them (the policy over ClockMap, device_clock.h). A GPU backend
// supplies only its events (ClockEvents: record one on an idle stream of
// the clock's own, ask whether it is done, the device's time between two);
// no CUDA here, so the policy is tested on any machine.
//
// Anchors are recorded about once a second while the device's ops are
// traced, by the worker that asks for the current anchor, which spins for
// it at most kSpinNs (an idle stream runs it at once) and never waits for
// the device's queued work: an anchor not done by then stays pending, and
// every later call polls it. Its reading is then too wide to be used, but
// its place on the device's clock is. Placing an event polls first, so an
// anchor the device has passed is on the map before any event after it is
// placed. The first anchor is used only with a usable reading (it is
// recorded again kFirstRetryNs later, and taken whatever its reading at
// the kFirstTries-th try); ops traced before it exists keep their launch
// times. Events of one device compare whatever their streams, so every
// lane of the device shares its clock, and their spans order as the device
// ran them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "device_clock.h"

namespace tide {

/// A GPU backend's side of an AnchorClock: ClockMap::kKeep anchor events
/// (slots) on an idle stream of the clock's own. Every call clears the
/// backend's error state when it fails (a failure here is not the next
/// launch's error). Called with the clock's lock held.
class ClockEvents {
 public:
  enum class State { done, not_yet, failed };
  virtual ~ClockEvents() = default;
  /// Records slot `slot`'s event on the clock's stream; false when that fails.
  virtual bool record(std::size_t slot) = 0;
  /// Whether slot `slot`'s event has happened on the device.
  virtual State query(std::size_t slot) = 0;
  /// The device's milliseconds from slot `from`'s event to slot `to`'s.
  virtual bool elapsed_ms(std::size_t from, std::size_t to, float& ms) = 0;
  /// The device's milliseconds from slot `from`'s event to `event`, one of
  /// the backend's own (a traced op's begin or end).
  virtual bool elapsed_ms(std::size_t from, const void* event, float& ms) = 0;
};

class AnchorClock {
 public:
  static constexpr std::int64_t kRenewNs = 1'000'000'000;  // a new anchor when the newest is older
  static constexpr std::int64_t kFirstRetryNs = 10'000'000;
  // No longer than a usable reading's window (less the reads around it).
  static constexpr std::int64_t kSpinNs = ClockMap::kMaxWindowNs - 20'000;
  // A first anchor refused this many times for its wide reading (a device
  // whose queues are all busy) is taken anyway; later readings bend the
  // map back toward the host.
  static constexpr int kFirstTries = 10;

  /// `now_ns`: the host's steady clock in nanoseconds (a test's own clock).
  explicit AnchorClock(std::unique_ptr<ClockEvents> events, std::int64_t (*now_ns)() = steady_now_ns);

  /// The anchor a traced op recorded now is timed against, renewing it
  /// when it is older than kRenewNs (spinning up to kSpinNs for the new
  /// one); false while the device has none yet. Any thread.
  bool current(std::uint64_t& k);

  /// Host times of events `begin` and `end` (complete, the backend's own)
  /// of an op recorded with anchor `k` current; false when they cannot be
  /// placed (the anchor's slot was reused, an elapsed time failed).
  bool place(std::uint64_t k, const void* begin, const void* end, std::int64_t& start_ns, std::int64_t& end_ns);

  struct Report {
    std::uint64_t anchors = 0, readings_used = 0, readings_ignored = 0, link_failures = 0;
    double last_residual_ns = 0, max_residual_ns = 0;
  };
  Report report();

  static std::int64_t steady_now_ns();

 private:
  static std::size_t slot(std::uint64_t k) { return static_cast<std::size_t>(k % ClockMap::kKeep); }
  std::uint64_t next() const { return map_.empty() ? 0 : map_.newest() + 1; }
  void finish_pending(std::int64_t after);  // m_ held
  void poll_pending();                      // m_ held

  const std::unique_ptr<ClockEvents> events_;
  std::int64_t (*const now_ns_)();
  std::mutex m_;  // guards all below; the events' calls are made under it
  ClockMap map_;
  std::uint64_t valid_from_ = 0;  // anchors below lost their event slot to a newer one
  bool pending_ = false;          // anchor next() is recorded, not yet seen done
  std::uint64_t generation_ = 0;  // of recordings, so a late spinner finishes only its own
  std::int64_t pending_before_ = 0;
  std::int64_t last_try_ns_ = 0;  // of a recording
  int first_refused_ = 0;         // first anchors refused for their reading
  std::uint64_t link_failures_ = 0;  // anchors dropped: their interval to the previous one was not given
};

}  // namespace tide
