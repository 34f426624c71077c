#include "lane.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

#include <tide/core/cuda_check.h>

#include "../anchor_clock.h"
#include "../memory.h"
#include "cuda_runtime.h"

namespace tide::backend::cuda_impl {

namespace {
cudaEvent_t ev(void* e) { return static_cast<cudaEvent_t>(e); }

Fault fault(cudaError_t e, const char* call, int line) {
  if (e == cudaSuccess) return {};
  return {detail::cuda_error_message(e, call, __FILE__, line), detail::cuda_error_is_sticky(e)};
}

/// The CUDA side of a device's AnchorClock (anchor_clock.h): ClockMap::kKeep
/// timing events on a non-blocking stream of its own, which stays idle.
struct CudaClockEvents final : ClockEvents {
  cudaStream_t stream = nullptr;
  cudaEvent_t events[ClockMap::kKeep]{};

  bool record(std::size_t slot) override { return ok(cudaEventRecord(events[slot], stream)); }
  State query(std::size_t slot) override {
    const cudaError_t r = cudaEventQuery(events[slot]);
    if (r == cudaSuccess) return State::done;
    if (r == cudaErrorNotReady) return State::not_yet;
    cudaGetLastError();
    return State::failed;
  }
  bool elapsed_ms(std::size_t from, std::size_t to, float& ms) override {
    return ok(cudaEventElapsedTime(&ms, events[from], events[to]));
  }
  bool elapsed_ms(std::size_t from, const void* event, float& ms) override {
    return ok(cudaEventElapsedTime(&ms, events[from], static_cast<cudaEvent_t>(const_cast<void*>(event))));
  }
  /// Frees what was made (a clock is kept for the process; this runs only
  /// when making one failed).
  void destroy() {
    for (auto& e : events)
      if (e && cudaEventDestroy(e) != cudaSuccess) cudaGetLastError();
    if (stream && cudaStreamDestroy(stream) != cudaSuccess) cudaGetLastError();
  }

 private:
  static bool ok(cudaError_t e) {
    if (e == cudaSuccess) return true;
    cudaGetLastError();  // not the next launch's error
    return false;
  }
};

struct Clocks {
  std::mutex m;
  std::map<int, AnchorClock*> by_device;
};
Clocks& clocks() {
  static auto* c = new Clocks();  // never freed: lanes may outlive statics
  return *c;
}

/// The clock of `device` (its stream and events; its first anchor comes
/// with the first traced op); null when they cannot be made (tried again
/// at the next lane's first traced op). Waits for nothing on the device.
AnchorClock* device_clock(int device) {
  std::lock_guard<std::mutex> lock(clocks().m);
  auto it = clocks().by_device.find(device);
  if (it != clocks().by_device.end()) return it->second;
  auto events = std::make_unique<CudaClockEvents>();
  bool ok = false;
  try {
    DeviceGuard on(device);
    ok = cudaStreamCreateWithFlags(&events->stream, cudaStreamNonBlocking) == cudaSuccess;
    for (auto& e : events->events) ok = ok && cudaEventCreate(&e) == cudaSuccess;
  } catch (const std::exception&) {
    ok = false;
  }
  if (!ok) {
    cudaGetLastError();
    events->destroy();
    return nullptr;
  }
  return clocks().by_device.emplace(device, new AnchorClock(std::move(events))).first->second;
}
}  // namespace

namespace {
std::chrono::microseconds poll_while_waited() {
  return std::chrono::microseconds(memory::whole_number_env("TIDE_CUDA_WAIT_POLL_US", "microseconds").value_or(2000));
}
}  // namespace

CudaLane::CudaLane(int device, StreamKind kind) : poll_while_waited_(poll_while_waited()), device_(device) {
  events_.resize(kRing, nullptr);
  recorded_at_.assign(kRing, 0);
  stream_ = create_stream(device, kind);
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

int CudaLane::enter() const {
  int current = 0;
  TIDE_CUDA_CHECK(cudaGetDevice(&current));
  if (current == device_) return -1;
  TIDE_CUDA_CHECK(cudaSetDevice(device_));
  return current;
}

void CudaLane::restore(int previous) const noexcept {
  if (previous >= 0 && cudaSetDevice(previous) != cudaSuccess) cudaGetLastError();
}

Fault CudaLane::record(std::uint64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  Fault f = fault(cudaEventRecord(ev(events_[seq % kRing]), static_cast<cudaStream_t>(stream_)),
                  "cudaEventRecord (after the op)", __LINE__);
  if (!f) {
    last_recorded_ = seq;
    recorded_at_[seq % kRing] = seq;
  }
  return f;
}

Fault CudaLane::make_wait(std::uint64_t seq, void* consumer, const std::atomic<std::uint64_t>& completed) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (completed.load(std::memory_order_seq_cst) >= seq) return {};
  if (last_recorded_ < seq) return {"no event covers the awaited op", false};  // the caller waited for its launch
  // The first event recorded at or after op seq (events follow runs of
  // ops, so it is at most a run away): the consumer waits for that run and
  // no more. Op seq is not done, so no slot from seq on has been recorded
  // again for a later lap; a slot still holding an earlier lap's event is
  // told apart by its recorded op.
  std::uint64_t at = last_recorded_;
  for (std::uint64_t s = seq; s < last_recorded_ && s < seq + kRing; ++s)
    if (recorded_at_[s % kRing] == s) {
      at = s;
      break;
    }
  return fault(cudaStreamWaitEvent(static_cast<cudaStream_t>(consumer), ev(events_[at % kRing]), 0),
               "cudaStreamWaitEvent(consumer, event of the producer's op, 0)", __LINE__);
}

Fault CudaLane::wait_done(std::uint64_t seq, const std::atomic<std::uint64_t>& host_wants, std::uint64_t first) {
  cudaEvent_t e = ev(events_[seq % kRing]);
  // Most tiny ops finish within microseconds of the previous one: poll for
  // about 20 us before paying for a sleep and a wake-up. While a host thread
  // waits for one of the ops this event covers (wait_to_read, wait_all, a
  // blocker), poll on, up to poll_while_waited_ from the start of this wait,
  // as a CUDA synchronize spins by default: the sleeping wait ends with an
  // interrupt and a thread's wake-up, and at the end of a burst that the
  // host waits for, nothing else hides that time. For an earlier event the
  // host's op is still queued behind, the wake-up overlaps that work: sleep.
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::microseconds(20), bound = start + poll_while_waited_;
  auto awaited_here = [&] {
    const std::uint64_t w = host_wants.load(std::memory_order_relaxed);
    return w >= first && w <= seq;
  };
  for (;;) {
    cudaError_t r = cudaEventQuery(e);
    if (r == cudaSuccess) return {};
    if (r != cudaErrorNotReady) return fault(r, "cudaEventQuery", __LINE__);
    const auto now = std::chrono::steady_clock::now();
    if (now > until && (now > bound || !awaited_here())) break;
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
    Fault f;
    try {
      DeviceGuard on(device_);  // the events must be the lane's device's, whatever a kernel left current
      for (std::size_t i = 0; i < 2 * kRing && !f; ++i) {
        cudaEvent_t x = nullptr;
        f = fault(cudaEventCreate(&x), "cudaEventCreate (timing)", __LINE__);
        (i < kRing ? begin_[i] : end_[i - kRing]) = x;
      }
    } catch (const std::exception& ex) {
      f = {ex.what(), false};
    }
    if (f) {
      for (auto* r : {&begin_, &end_}) {
        for (auto& y : *r)
          if (y && cudaEventDestroy(ev(y)) != cudaSuccess) cudaGetLastError();
        r->clear();
      }
      return f;
    }
  }
  std::uint64_t k = 0;
  if (!clock_->current(k)) return {"the device's clock has no anchor yet", false};
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
  return clock_->place(anchor_of_[seq % kRing], begin_[seq % kRing], end_[seq % kRing], start_ns, end_ns);
}

}  // namespace tide::backend::cuda_impl

namespace tide::backend {

bool clock_report(int device, ClockReport& out) {
  AnchorClock* c = nullptr;
  {
    std::lock_guard<std::mutex> lock(cuda_impl::clocks().m);
    auto it = cuda_impl::clocks().by_device.find(device);
    if (it == cuda_impl::clocks().by_device.end()) return false;
    c = it->second;
  }
  const AnchorClock::Report r = c->report();
  out.anchors = r.anchors;
  out.readings_used = r.readings_used;
  out.readings_ignored = r.readings_ignored;
  out.last_residual_ns = r.last_residual_ns;
  out.max_residual_ns = r.max_residual_ns;
  out.link_failures = r.link_failures;
  return true;
}

std::unique_ptr<Lane> make_lane(int device, StreamKind kind) {
  return std::make_unique<cuda_impl::CudaLane>(device, kind);
}

}  // namespace tide::backend
