#include "lane.h"

#include <cuda_runtime.h>

#include <chrono>
#include <thread>

#include <tide/core/cuda_check.h>

#include "cuda_runtime.h"

namespace tide::backend::cuda_impl {

namespace {
cudaEvent_t ev(void* e) { return static_cast<cudaEvent_t>(e); }

Fault fault(cudaError_t e, const char* call, int line) {
  if (e == cudaSuccess) return {};
  return {detail::cuda_error_message(e, call, __FILE__, line), detail::cuda_error_is_sticky(e)};
}
}  // namespace

CudaLane::CudaLane(int device, StreamKind kind) : device_(device) {
  stream_ = create_stream(device, kind);
  events_.resize(kRing, nullptr);
  try {
    for (auto& e : events_) {
      cudaEvent_t x = nullptr;
      // Blocking sync: the completion thread sleeps in cudaEventSynchronize
      // instead of spinning a core while the GPU works.
      TIDE_CUDA_CHECK(cudaEventCreateWithFlags(&x, cudaEventDisableTiming | cudaEventBlockingSync));
      e = x;
    }
  } catch (...) {
    for (auto& e : events_)
      if (e) cudaEventDestroy(ev(e));
    destroy_stream(device_, stream_);
    throw;
  }
}

CudaLane::~CudaLane() {
  if (cudaSetDevice(device_) != cudaSuccess) cudaGetLastError();
  for (auto& e : events_)
    if (e && cudaEventDestroy(ev(e)) != cudaSuccess) cudaGetLastError();
  destroy_stream(device_, stream_);
}

Fault CudaLane::record(std::uint64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  return fault(cudaEventRecord(ev(events_[seq % kRing]), static_cast<cudaStream_t>(stream_)),
               "cudaEventRecord (after the op)", __LINE__);
}

Fault CudaLane::make_wait(std::uint64_t seq, void* consumer, const std::atomic<std::uint64_t>& completed) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (completed.load(std::memory_order_seq_cst) >= seq) return {};
  return fault(cudaStreamWaitEvent(static_cast<cudaStream_t>(consumer), ev(events_[seq % kRing]), 0),
               "cudaStreamWaitEvent(consumer, event of the producer's op, 0)", __LINE__);
}

Fault CudaLane::wait_done(std::uint64_t seq) {
  cudaEvent_t e = ev(events_[seq % kRing]);
  // Most tiny ops finish within microseconds of the previous one: poll for
  // about 20 us before paying for a sleep and a wake-up.
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
  for (;;) {
    cudaError_t r = cudaEventQuery(e);
    if (r == cudaSuccess) return {};
    if (r != cudaErrorNotReady) return fault(r, "cudaEventQuery", __LINE__);
    if (std::chrono::steady_clock::now() > until) break;
    std::this_thread::yield();
  }
  cudaError_t r = cudaEventSynchronize(e);
  return fault(r, "cudaEventSynchronize", __LINE__);
}

}  // namespace tide::backend::cuda_impl

namespace tide::backend {

std::unique_ptr<Lane> make_lane(int device, StreamKind kind) {
  return std::make_unique<cuda_impl::CudaLane>(device, kind);
}

}  // namespace tide::backend
