// TraceBuffer: one stream's part of the timeline (internal to core).
//
// The stream's worker appends an event per op it runs; the frontend takes
// or reads them. On a GPU stream of the async engine an event is not final
// when it is appended: the worker only launched the op, and the completion
// thread later moves the event to the device's times. Such a buffer
// "settles": its events are handed out only once the completion thread has
// settled them, in order, so a reader never gets a launch time that is
// about to change, and a retime never lands on an event already handed out.
//
// Every event has a slot, its place in the stream's whole trace (0, 1, ...),
// which stays valid however many events were taken before it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include <tide/core/engine.h>

namespace tide {

class TraceBuffer {
 public:
  static constexpr std::size_t kMaxHeld = std::size_t{1} << 20;

  /// `settles`: events wait for settle() before they are handed out.
  explicit TraceBuffer(bool settles = false, std::size_t max_held = kMaxHeld)
      : settles_(settles), max_held_(max_held) {}

  bool settles() const { return settles_; }

  /// Appends a TraceEvent made of `fields`, in place (the stream's worker),
  /// and returns its slot, or -1 when `max_held` events are held already
  /// (the event is counted as dropped).
  template <typename... Fields>
  std::int64_t append(Fields&&... fields) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (held_.size() >= max_held_) {
      dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return -1;
    }
    held_.emplace_back(std::forward<Fields>(fields)...);
    return static_cast<std::int64_t>(taken_ + held_.size() - 1);
  }

  /// The event at `slot` is final (the completion thread, in slot order):
  /// with `start_ns`/`end_ns` when `retimed`, else as appended. Every
  /// earlier slot is final too.
  void settle(std::int64_t slot, bool retimed, std::int64_t start_ns, std::int64_t end_ns) {
    if (slot < 0) return;
    const auto at = static_cast<std::uint64_t>(slot);
    std::lock_guard<std::mutex> lock(mutex_);
    if (retimed && at >= taken_ && at - taken_ < held_.size()) {
      TraceEvent& ev = held_[at - taken_];
      ev.start_ns = start_ns;
      ev.end_ns = end_ns;
    }
    settled_ = std::max(settled_, at + 1);
  }

  /// Moves the final events into `out` and forgets them.
  void take(std::vector<TraceEvent>& out) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t n = final_count();
    out.insert(out.end(), std::make_move_iterator(held_.begin()),
               std::make_move_iterator(held_.begin() + static_cast<std::ptrdiff_t>(n)));
    held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(n));
    taken_ += n;
  }

  /// Copies the final events from slot `cursor` on (events taken already
  /// are skipped) into `out`, and moves `cursor` past them.
  void read(std::uint64_t& cursor, std::vector<TraceEvent>& out) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::uint64_t end = taken_ + final_count();
    const std::uint64_t from = std::max(cursor, taken_);
    if (from < end)
      out.insert(out.end(), held_.begin() + static_cast<std::ptrdiff_t>(from - taken_),
                 held_.begin() + static_cast<std::ptrdiff_t>(end - taken_));
    cursor = std::max(cursor, end);
  }

  /// Events held, final or not.
  std::size_t held() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_.size();
  }
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  // Held events that may be handed out (mutex_ held).
  std::size_t final_count() const {
    if (!settles_) return held_.size();
    return settled_ <= taken_ ? 0 : std::min<std::size_t>(held_.size(), settled_ - taken_);
  }

  const bool settles_;
  const std::size_t max_held_;
  mutable std::mutex mutex_;  // taken only while tracing
  std::vector<TraceEvent> held_;  // held_[i] is slot taken_ + i
  std::uint64_t taken_ = 0;     // events take() removed
  std::uint64_t settled_ = 0;   // slots below are final (settling buffers)
  std::atomic<std::uint64_t> dropped_{0};  // one writer: the worker
};

}  // namespace tide
