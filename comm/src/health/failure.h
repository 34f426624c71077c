// Whether a communicator is broken, and why. Internal to comm/.
//
// A failed collective leaves MPI (or NCCL) with a call that cannot be
// cancelled, so the communicator stays broken: every later collective fails
// at once with the first reason. A failure in a communicator split from
// another breaks that one too (up to the world), so the Runtime sees it.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

namespace tide::detail {

class FailureState {
 public:
  /// `parent`: the state of the communicator this one was split from (null
  /// for a world); it outlives this one.
  explicit FailureState(FailureState* parent = nullptr) : parent_(parent) {}
  FailureState(const FailureState&) = delete;
  FailureState& operator=(const FailureState&) = delete;

  /// From now on a first failure is also printed to stderr at once, as
  /// "tide: rank <world_rank>: collective failure: ..." (set once the
  /// communicator spans several ranks).
  void announce_as(int world_rank) {
    announce_ = true;
    world_rank_ = world_rank;
  }

  /// This communicator or one it was split from is broken. Any thread.
  bool is_broken() const;
  /// Why (the first failure, or a desync that explains it); "" if not.
  std::string failure();
  /// Throws CommError if broken.
  void check_usable();
  /// Breaks this communicator and those it was split from, and throws
  /// CommError(what). `diagnosis` marks a desync found by a check: it goes
  /// first in the reason, ahead of a failure it explains (unless a desync
  /// was named already).
  [[noreturn]] void fail(const std::string& what, bool diagnosis = false);

 private:
  FailureState* parent_;
  bool announce_ = false;
  int world_rank_ = 0;
  std::atomic<bool> broken_{false};
  std::mutex mutex_;
  std::string reason_;      // guarded by mutex_
  bool diagnosed_ = false;  // reason_ names a desync; guarded by mutex_
};

}  // namespace tide::detail
