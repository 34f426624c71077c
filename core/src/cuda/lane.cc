#include "lane.h"

#include <cuda_runtime.h>

#include <chrono>
#include <thread>

#include <tide/core/cuda_check.h>

#include "cuda_runtime.h"

namespace tide::cuda_backend {

namespace {
cudaEvent_t ev(void* e) { return static_cast<cudaEvent_t>(e); }

std::string describe(cudaError_t e, const char* call) {
  return detail::cuda_error_message(e, call, __FILE__, __LINE__);
}
}  // namespace

Lane::Lane(int device, StreamKind kind) : device_(device) {
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

Lane::~Lane() {
  if (cudaSetDevice(device_) != cudaSuccess) cudaGetLastError();
  for (auto& e : events_)
    if (e && cudaEventDestroy(ev(e)) != cudaSuccess) cudaGetLastError();
  destroy_stream(device_, stream_);
}

std::string Lane::record(std::uint64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  cudaError_t e = cudaEventRecord(ev(events_[seq % kRing]), static_cast<cudaStream_t>(stream_));
  return e == cudaSuccess ? std::string() : describe(e, "cudaEventRecord (after the op)");
}

void Lane::make_wait(std::uint64_t seq, void* consumer, const std::atomic<std::uint64_t>& completed) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (completed.load(std::memory_order_seq_cst) >= seq) return;
  TIDE_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(consumer), ev(events_[seq % kRing]), 0));
}

std::string Lane::wait_done(std::uint64_t seq) {
  cudaEvent_t e = ev(events_[seq % kRing]);
  // Most tiny ops finish within microseconds of the previous one: poll for
  // about 20 us before paying for a sleep and a wake-up.
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
  for (;;) {
    cudaError_t r = cudaEventQuery(e);
    if (r == cudaSuccess) return {};
    if (r != cudaErrorNotReady) return describe(r, "cudaEventQuery");
    if (std::chrono::steady_clock::now() > until) break;
    std::this_thread::yield();
  }
  cudaError_t r = cudaEventSynchronize(e);
  return r == cudaSuccess ? std::string() : describe(r, "cudaEventSynchronize");
}

}  // namespace tide::cuda_backend
