#include "lane.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <map>
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

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Where a device's event clock sits on the host's: an event recorded on an
/// idle stream of its own and waited for (spinning), and the host's time
/// right after. Events of one device compare with cudaEventElapsedTime
/// whatever their streams, so every lane of the device shares its anchor
/// and their spans order exactly as the device ran them. The host placement
/// is off by the wait's return latency (microseconds).
}  // namespace

struct Anchor {
  cudaEvent_t event = nullptr;
  std::int64_t host_ns = 0;
};

namespace {

/// The anchor of `device` (the calling thread's current device), made at
/// first use; null event when it cannot be made.
const Anchor& device_anchor(int device) {
  static std::mutex m;
  static std::map<int, Anchor>* anchors = new std::map<int, Anchor>();  // never freed: lanes may outlive statics
  std::lock_guard<std::mutex> lock(m);
  auto it = anchors->find(device);
  if (it != anchors->end()) return it->second;
  Anchor a;
  cudaStream_t s = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess) {
    if (cudaEventCreate(&a.event) == cudaSuccess && cudaEventRecord(a.event, s) == cudaSuccess &&
        cudaEventSynchronize(a.event) == cudaSuccess) {
      a.host_ns = steady_ns();
    } else {
      cudaGetLastError();
      if (a.event) cudaEventDestroy(a.event);
      a.event = nullptr;
    }
    if (cudaStreamDestroy(s) != cudaSuccess) cudaGetLastError();
  } else {
    cudaGetLastError();
  }
  return anchors->emplace(device, a).first->second;
}

/// Nanoseconds from the anchor's event to `e` (both complete). The device
/// gives milliseconds as a float: 2^-24 of the time since the anchor, about
/// 1 us after 16 s of tracing.
bool since_anchor(const Anchor& a, cudaEvent_t e, std::int64_t& ns) {
  float ms = 0;
  if (cudaEventElapsedTime(&ms, a.event, e) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  ns = a.host_ns + std::llround(static_cast<double>(ms) * 1e6);
  return true;
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
  for (auto* ring : {&events_, &begin_, &end_})
    for (auto& e : *ring)
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

Fault CudaLane::record_begin(std::uint64_t seq) {
  Fault f = record_begin_impl(seq);
  // Timing is optional: a failure here must not be left for the next
  // kernel launch's cudaGetLastError to report as its own, nor be retried
  // (2048 event creations) at every op.
  if (f && !f.sticky) {
    cudaGetLastError();
    if (begin_.empty()) timing_unavailable_ = true;
  }
  return f;
}

Fault CudaLane::record_begin_impl(std::uint64_t seq) {
  if (timing_unavailable_) return {"timing events could not be made on this device", false};
  if (begin_.empty()) {
    // First traced op: place the device's clock, make the rings.
    const Anchor& a = device_anchor(device_);
    if (!a.event) return {"the device's clock could not be placed on the host's", false};
    anchor_ = &a;
    begin_.resize(kRing, nullptr);
    end_.resize(kRing, nullptr);
    for (auto* ring : {&begin_, &end_})
      for (auto& e : *ring) {
        cudaEvent_t x = nullptr;
        if (Fault f = fault(cudaEventCreate(&x), "cudaEventCreate (timing)", __LINE__)) {
          for (auto* r : {&begin_, &end_}) {
            for (auto& y : *r)
              if (y && cudaEventDestroy(ev(y)) != cudaSuccess) cudaGetLastError();
            r->clear();
          }
          return f;
        }
        e = x;
      }
  }
  return fault(cudaEventRecord(ev(begin_[seq % kRing]), static_cast<cudaStream_t>(stream_)),
               "cudaEventRecord (before the op, timing)", __LINE__);
}

Fault CudaLane::record_end(std::uint64_t seq) {
  if (end_.empty()) return {"no timing events", false};
  Fault f = fault(cudaEventRecord(ev(end_[seq % kRing]), static_cast<cudaStream_t>(stream_)),
                  "cudaEventRecord (after the op, timing)", __LINE__);
  if (f && !f.sticky) cudaGetLastError();  // not the next launch's error
  return f;
}

bool CudaLane::span(std::uint64_t seq, std::int64_t& start_ns, std::int64_t& end_ns) {
  if (begin_.empty() || !anchor_) return false;
  return since_anchor(*anchor_, ev(begin_[seq % kRing]), start_ns) &&
         since_anchor(*anchor_, ev(end_[seq % kRing]), end_ns);
}

}  // namespace tide::backend::cuda_impl

namespace tide::backend {

std::unique_ptr<Lane> make_lane(int device, StreamKind kind) {
  return std::make_unique<cuda_impl::CudaLane>(device, kind);
}

}  // namespace tide::backend
