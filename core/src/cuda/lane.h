// Lane: the CUDA side of one tide stream (internal to core/, compiled only
// with TIDE_HAVE_CUDA): its cudaStream_t and a ring of events, one recorded
// after each op the stream's worker launches.
//
// The event of op `seq` lives in slot seq % kRing. Three threads use a lane:
// its worker records events; the workers of other CUDA streams make their
// streams wait on them (cudaStreamWaitEvent: the host does not block); its
// completion thread waits for them in order and so learns what the GPU has
// finished. A slot is recorded again only once its previous op has
// completed, and under the mutex that waiters hold, so a waiter never waits
// on a later op than the one it asked for.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <tide/core/device.h>

namespace tide::cuda_backend {

class Lane {
 public:
  /// Ops a stream may have launched and not completed; its worker waits
  /// past that (a bound on queued GPU work of about 1k kernels).
  static constexpr std::uint64_t kRing = 1024;

  Lane(int device, StreamKind kind);
  ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  int device() const { return device_; }
  void* native() const { return stream_; }

  /// Worker: after launching op `seq` (whose slot is free: op seq - kRing
  /// has completed). Returns an error message, empty on success.
  std::string record(std::uint64_t seq);
  /// Another CUDA stream's worker: makes `consumer` wait for op `seq` of
  /// this lane, which its worker has launched, unless `completed` (this
  /// lane's completed count) shows it done.
  void make_wait(std::uint64_t seq, void* consumer, const std::atomic<std::uint64_t>& completed);
  /// Completion thread: blocks until op `seq` has run on the GPU (a short
  /// poll, then a sleeping wait). Returns an error message, empty on success.
  std::string wait_done(std::uint64_t seq);

 private:
  int device_;
  void* stream_ = nullptr;
  std::vector<void*> events_;  // cudaEvent_t, timing disabled
  std::mutex mutex_;
};

}  // namespace tide::cuda_backend
