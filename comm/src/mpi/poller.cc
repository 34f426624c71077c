#include "poller.h"

#include <thread>

namespace tide {

Poller::Poller(double timeout_s)
    : timeout_(std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_s))) {}

bool Poller::next() {
  ++polls_;
  if (polls_ > 100) std::this_thread::yield();
  if (periodic()) {
    const auto now = clock::now();
    if (polls_ == 16) {
      start_ = now;
      deadline_ = now + timeout_;
    }
    const auto waited = now - start_;
    pause_ = waited > std::chrono::seconds(1)           ? std::chrono::microseconds(1000)
             : waited > std::chrono::microseconds(100) ? std::chrono::microseconds(50)
                                                        : std::chrono::microseconds(0);
  }
  if (pause_.count()) std::this_thread::sleep_for(pause_);
  return !((polls_ & 15) == 0 && clock::now() > deadline_);
}

}  // namespace tide
