// The CUDA lane (internal to core/src/cuda/): a tide stream's cudaStream_t
// and its ring of events, timing disabled (see backend::Lane for the
// contract and the threads that use a lane).
//
// A slot is recorded again only once its previous op has completed, and
// under the mutex that waiters hold, so a waiter never waits on a later op
// than the one it asked for.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "../backend.h"

namespace tide::backend::cuda_impl {

class CudaLane final : public Lane {
 public:
  CudaLane(int device, StreamKind kind);
  ~CudaLane() override;
  CudaLane(const CudaLane&) = delete;
  CudaLane& operator=(const CudaLane&) = delete;

  int device() const override { return device_; }
  void* native() const override { return stream_; }
  Fault record(std::uint64_t seq) override;
  Fault make_wait(std::uint64_t seq, void* consumer, const std::atomic<std::uint64_t>& completed) override;
  Fault wait_done(std::uint64_t seq) override;

 private:
  int device_;
  void* stream_ = nullptr;
  std::vector<void*> events_;  // cudaEvent_t
  std::mutex mutex_;
};

}  // namespace tide::backend::cuda_impl
