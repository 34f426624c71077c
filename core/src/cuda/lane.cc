#include "lane.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include <tide/core/cuda_check.h>

#include "../device_clock.h"
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

constexpr std::int64_t kRenewNs = 1'000'000'000;  // a new anchor when the newest is older
}  // namespace

/// A device's event clock placed on the host's (ClockMap, device_clock.h):
/// anchors are events recorded on an idle stream of their own and waited
/// for (spinning), about once a second while the device's ops are traced.
/// Events of one device compare with cudaEventElapsedTime whatever their
/// streams, so every lane of the device shares its clock, and their spans
/// order as the device ran them.
struct DeviceClock {
  std::mutex m;
  ClockMap map;                 // guarded by m
  std::uint64_t valid_from = 0;  // anchors below lost their event to a newer one (m)
  bool making = false;          // an anchor is being renewed, outside m (m)
  std::int64_t last_try_ns = 0;  // of a renewal (m)
  cudaStream_t stream = nullptr;
  cudaEvent_t events[ClockMap::kKeep]{};  // anchor k's is events[k % kKeep]

  /// Records anchor `k`'s event and waits for it (the caller is its only
  /// maker); the host's clock before and after, and the device's time
  /// since anchor k - 1 (k > 0).
  bool make(std::uint64_t k, std::int64_t& before, std::int64_t& after, double& since_ns) {
    cudaEvent_t e = events[k % ClockMap::kKeep];
    before = steady_ns();
    bool ok = cudaEventRecord(e, stream) == cudaSuccess && cudaEventSynchronize(e) == cudaSuccess;
    after = steady_ns();
    since_ns = 0;
    if (ok && k > 0) {
      float ms = 0;
      ok = cudaEventElapsedTime(&ms, events[(k - 1) % ClockMap::kKeep], e) == cudaSuccess;
      since_ns = static_cast<double>(ms) * 1e6;
    }
    if (!ok) cudaGetLastError();  // not the next launch's error
    return ok;
  }

  /// The anchor a traced op recorded now is timed against (a worker, its
  /// device current); renews it when it is older than kRenewNs. False
  /// when the device has no anchor.
  bool current(std::uint64_t& k) {
    std::unique_lock<std::mutex> lock(m);
    if (map.empty()) return false;
    const std::int64_t now = steady_ns();
    k = map.newest();
    if (making || now - map.newest_host_ns() < kRenewNs || now - last_try_ns < kRenewNs) return true;
    making = true;
    last_try_ns = now;
    const std::uint64_t next = k + 1;
    // Its event slot held anchor next - kKeep: no span may use that one now.
    if (next >= ClockMap::kKeep) valid_from = std::max(valid_from, next - ClockMap::kKeep + 1);
    lock.unlock();
    std::int64_t before = 0, after = 0;
    double since = 0;
    const bool ok = make(next, before, after, since);
    lock.lock();
    making = false;
    if (ok) k = map.add(since, before, after);
    return true;
  }

  /// Host times of the anchor-`k`-timed events `b` and `e` (complete).
  bool place(std::uint64_t k, cudaEvent_t b, cudaEvent_t e, std::int64_t& start_ns, std::int64_t& end_ns) {
    cudaEvent_t a = nullptr;
    {
      std::lock_guard<std::mutex> lock(m);
      if (map.empty() || k < valid_from || k > map.newest()) return false;
      a = events[k % ClockMap::kKeep];
    }
    float ms0 = 0, ms1 = 0;
    if (cudaEventElapsedTime(&ms0, a, b) != cudaSuccess || cudaEventElapsedTime(&ms1, a, e) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    // A renewal that took anchor k's event slot meanwhile makes what was
    // read meaningless: it marks k invalid before recording there.
    std::lock_guard<std::mutex> lock(m);
    if (k < valid_from) return false;
    return map.to_host(k, static_cast<double>(ms0) * 1e6, start_ns) &&
           map.to_host(k, static_cast<double>(ms1) * 1e6, end_ns);
  }
};

namespace {

/// The clock of `device` (the calling thread's current device), with its
/// first anchor made at first use; null when it cannot be made.
DeviceClock* device_clock(int device) {
  static std::mutex m;
  static auto* clocks = new std::map<int, DeviceClock*>();  // never freed: lanes may outlive statics
  std::lock_guard<std::mutex> lock(m);
  auto it = clocks->find(device);
  if (it != clocks->end()) return it->second;
  auto* c = new DeviceClock();
  bool ok = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking) == cudaSuccess;
  for (auto& e : c->events) ok = ok && cudaEventCreate(&e) == cudaSuccess;
  std::int64_t before = 0, after = 0;
  double since = 0;
  ok = ok && c->make(0, before, after, since);
  if (!ok) {
    cudaGetLastError();
    for (auto& e : c->events)
      if (e && cudaEventDestroy(e) != cudaSuccess) cudaGetLastError();
    if (c->stream && cudaStreamDestroy(c->stream) != cudaSuccess) cudaGetLastError();
    delete c;
    c = nullptr;  // remembered: not tried again
  } else {
    c->map.add(0, before, after);
  }
  return clocks->emplace(device, c).first->second;
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
    clock_ = device_clock(device_);
    if (!clock_) return {"the device's clock could not be placed on the host's", false};
    anchor_of_.assign(kRing, 0);
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
  std::uint64_t k = 0;
  if (!clock_->current(k)) return {"the device's clock has no anchor", false};
  anchor_of_[seq % kRing] = k;
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
  if (begin_.empty() || !clock_) return false;
  return clock_->place(anchor_of_[seq % kRing], ev(begin_[seq % kRing]), ev(end_[seq % kRing]), start_ns, end_ns);
}

}  // namespace tide::backend::cuda_impl

namespace tide::backend {

std::unique_ptr<Lane> make_lane(int device, StreamKind kind) {
  return std::make_unique<cuda_impl::CudaLane>(device, kind);
}

}  // namespace tide::backend
