#include "failure.h"

#include "flight_recorder.h"
#include "liveness.h"

#include <cstdio>

#include <tide/comm/types.h>

namespace tide::detail {

bool FailureState::is_broken() const {
  for (const FailureState* p = this; p; p = p->parent_)
    if (p->broken_.load(std::memory_order_acquire)) return true;
  return false;
}

std::string FailureState::failure() {
  for (FailureState* p = this; p; p = p->parent_) {
    if (!p->broken_.load(std::memory_order_acquire)) continue;
    std::lock_guard<std::mutex> lock(p->mutex_);
    return p->reason_;
  }
  return "";
}

void FailureState::check_usable() {
  if (!is_broken()) return;
  throw CommError("communicator is broken by an earlier failure: " + failure());
}

void FailureState::fail(const std::string& what, bool diagnosis) {
  bool news = false;  // this communicator's first failure, or the desync that explains it
  bool world_breaks = false;  // the first failure of the world (the last state of the chain)
  for (FailureState* p = this; p; p = p->parent_) {
    {
      std::lock_guard<std::mutex> lock(p->mutex_);
      const std::string reason = p == this ? what : "in a communicator split from it: " + what;
      if (p->reason_.empty()) {
        p->reason_ = reason;
        news = news || p == this;
        world_breaks = !p->parent_ && p->announce_;
      } else if (diagnosis && !p->diagnosed_) {
        p->reason_ = reason + " (before it was found: " + p->reason_ + ")";
        news = news || p == this;
      }
      p->diagnosed_ = p->diagnosed_ || diagnosis;
    }
    p->broken_.store(true, std::memory_order_release);
  }
  // Said at once, on the rank where it happened: the op's error reaches the
  // frontend only at its next barrier, which may be long after (a step of
  // compute, a check's wait), and a rank cut off from mpirun may be ended
  // before it gets there.
  if (news && announce_) {
    std::fprintf(stderr, "tide: rank %d: collective failure: %s\n", world_rank_, what.c_str());
    std::fflush(stderr);
  }
  if (news) flight_dump(what.c_str());
  // The peers may be waiting for this rank in a collective it will never
  // join now: each is told why, so that it fails at once with this cause.
  if (world_breaks) liveness_tell_peers(what);
  throw CommError(what);
}

}  // namespace tide::detail
