#include "anchor_clock.h"

#include <algorithm>
#include <chrono>

namespace tide {

std::int64_t AnchorClock::steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

AnchorClock::AnchorClock(std::unique_ptr<ClockEvents> events, std::int64_t (*now_ns)())
    : events_(std::move(events)), now_ns_(now_ns) {}

void AnchorClock::finish_pending(std::int64_t after) {
  pending_ = false;
  const std::uint64_t k = next();
  if (k == 0) {
    if (after - pending_before_ <= ClockMap::kMaxWindowNs || ++first_refused_ >= kFirstTries)
      map_.add(0, pending_before_, after);
    return;
  }
  float ms = 0;
  if (!events_->elapsed_ms(slot(k - 1), slot(k), ms)) {
    ++link_failures_;  // the next renewal tries again
    return;
  }
  map_.add(static_cast<double>(ms) * 1e6, pending_before_, after);
}

void AnchorClock::poll_pending() {
  if (!pending_) return;
  switch (events_->query(slot(next()))) {
    case ClockEvents::State::done: finish_pending(now_ns_()); break;
    case ClockEvents::State::failed: pending_ = false; break;
    case ClockEvents::State::not_yet: break;
  }
}

bool AnchorClock::current(std::uint64_t& k) {
  std::unique_lock<std::mutex> lock(m_);
  poll_pending();
  const std::int64_t now = now_ns_();
  const std::int64_t wait = map_.empty() ? kFirstRetryNs : kRenewNs;
  if (!pending_ && (map_.empty() || now - map_.newest_host_ns() >= kRenewNs) && now - last_try_ns_ >= wait) {
    last_try_ns_ = now;
    const std::uint64_t n = next();
    // Its event slot held anchor n - kKeep: no span may use that one now.
    if (n >= ClockMap::kKeep) valid_from_ = std::max(valid_from_, n - ClockMap::kKeep + 1);
    const std::int64_t before = now_ns_();
    pending_before_ = before;
    if (events_->record(slot(n))) {
      pending_ = true;
      const std::uint64_t mine = ++generation_;
      lock.unlock();
      bool done = false;
      for (;;) {
        std::unique_lock<std::mutex> ask(m_);
        const ClockEvents::State s = events_->query(slot(n));
        ask.unlock();
        if (s == ClockEvents::State::done) {
          done = true;
          break;
        }
        if (s == ClockEvents::State::failed) break;  // the poll drops the anchor
        if (now_ns_() - before >= kSpinNs) break;
      }
      const std::int64_t after = now_ns_();
      lock.lock();
      if (done && pending_ && generation_ == mine) finish_pending(after);
    }
  }
  if (map_.empty()) return false;
  k = map_.newest();
  return true;
}

bool AnchorClock::place(std::uint64_t k, const void* begin, const void* end, std::int64_t& start_ns,
                        std::int64_t& end_ns) {
  std::lock_guard<std::mutex> lock(m_);
  poll_pending();  // an anchor the device has passed goes on the map before any later event is placed
  if (k < valid_from_) return false;
  auto at = [&](const void* event, std::int64_t& host_ns) {
    auto elapsed = [&](std::uint64_t j, double& ns) {
      float ms = 0;
      if (j < valid_from_ || !events_->elapsed_ms(slot(j), event, ms)) return false;
      ns = static_cast<double>(ms) * 1e6;
      return true;
    };
    return map_.place(k, elapsed, host_ns);
  };
  return at(begin, start_ns) && at(end, end_ns);
}

AnchorClock::Report AnchorClock::report() {
  std::lock_guard<std::mutex> lock(m_);
  Report r;
  r.anchors = map_.anchors();
  r.readings_used = map_.readings_used();
  r.readings_ignored = map_.readings_ignored();
  r.last_residual_ns = map_.last_residual_ns();
  r.max_residual_ns = map_.max_residual_ns();
  r.link_failures = link_failures_;
  return r;
}

}  // namespace tide
