// The CUDA lane (internal to core/src/cuda/): a tide stream's cudaStream_t
// and its ring of events, timing disabled (see backend::Lane for the
// contract and the threads that use a lane). While tracing, a second pair of
// rings, with timing, brackets each op; they are made at the first traced op.
//
// Events follow runs of ops (Stream::cover): the event of op seq, in slot
// seq % kRing, shows every op up to seq done. A slot is recorded again only
// once its previous op has completed, and under the mutex that waiters hold,
// and each slot keeps the op it was recorded after, so a waiter finds the
// event of its op's run, never a later lap's.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "../backend.h"

namespace tide {
class AnchorClock;  // a device's event clock placed on the host's (anchor_clock.h)
}  // namespace tide

namespace tide::backend::cuda_impl {

class CudaLane final : public Lane {
 public:
  CudaLane(int device, StreamKind kind);
  ~CudaLane() override;
  CudaLane(const CudaLane&) = delete;
  CudaLane& operator=(const CudaLane&) = delete;

  int device() const override { return device_; }
  void bind_thread() const override { set_device(device_); }
  void* native() const override { return stream_; }
  int enter() const override;
  void restore(int previous) const noexcept override;
  Fault record(std::uint64_t seq) override;
  Fault make_wait(std::uint64_t seq, void* consumer, const std::atomic<std::uint64_t>& completed) override;
  Fault wait_done(std::uint64_t seq, const std::atomic<std::uint64_t>& host_wants, std::uint64_t first) override;
  /// As long as the completion thread polls for it (at least the default).
  std::chrono::microseconds host_poll() const override {
    return std::max(Lane::host_poll(), poll_while_waited_);
  }
  Fault record_begin(std::uint64_t seq) override;
  Fault record_end(std::uint64_t seq) override;
  bool span(std::uint64_t seq, std::int64_t& start_ns, std::int64_t& end_ns) override;
  Fault record_begin_impl(std::uint64_t seq);

 private:
  // The most a completion wait polls while a host thread waits for its ops,
  // and that host thread itself (TIDE_CUDA_WAIT_POLL_US, default 2 ms; past
  // it a wake-up is a small part of the wait: a sleep). Read before
  // anything is made.
  const std::chrono::microseconds poll_while_waited_;
  int device_;
  void* stream_ = nullptr;
  std::vector<void*> events_;  // cudaEvent_t
  std::mutex mutex_;
  std::uint64_t last_recorded_ = 0;  // the op after which the latest event was recorded (under mutex_)
  std::vector<std::uint64_t> recorded_at_;  // per slot, the op after which its event was recorded (under mutex_)
  // Timing events (worker: record; completion thread: read, after the op's
  // completion, before its slot can be recorded again).
  std::vector<void*> begin_, end_;
  AnchorClock* clock_ = nullptr;  // its device's, set with the rings
  std::vector<std::uint64_t> anchor_of_;  // the anchor each slot's timing events are placed by
  bool timing_unavailable_ = false;  // the rings could not be made: not tried again (worker only)
};

}  // namespace tide::backend::cuda_impl
