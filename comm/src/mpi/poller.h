// The wait schedule of the comm thread's poll loops. Internal to comm/.
#pragma once

#include <chrono>

namespace tide {

/// MPI progresses a non-blocking collective only inside MPI calls, so the
/// first ~100 polls do not sleep (past that they yield, so that compute
/// threads sharing the core still run). Past 100 us the loop is waiting for
/// a peer that is still computing, and a spinning poller would take the CPU
/// that peer (or this rank's own compute stream) needs: it polls every
/// 50 us, and past a second every millisecond.
///
/// The clock starts at the 16th poll (a microsecond or two in): most waits
/// of a small collective end sooner, and then read no clock at all.
class Poller {
 public:
  explicit Poller(double timeout_s);
  /// Call after each poll that found the work not done: pauses per the
  /// schedule; false once past the deadline (looked at every 16 polls).
  /// waited_s() counts from the clock's start (0 before it).
  bool next();
  /// True on every 16th poll: the time for occasional side work.
  bool periodic() const { return (polls_ & 15) == 0 && polls_ > 0; }
  /// Past the first spin: the wait is no longer a prompt one.
  bool slow() const { return pause_.count() > 0; }
  double waited_s() const {
    return polls_ < 16 ? 0.0 : std::chrono::duration<double>(clock::now() - start_).count();
  }

 private:
  using clock = std::chrono::steady_clock;
  clock::duration timeout_;
  clock::time_point start_, deadline_;
  std::chrono::microseconds pause_{0};
  int polls_ = 0;
};

}  // namespace tide
