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
}  // namespace

/// A device's event clock placed on the host's (ClockMap, device_clock.h):
/// anchors are events recorded on an idle stream of their own, about once
/// a second while the device's ops are traced. Events of one device
/// compare with cudaEventElapsedTime whatever their streams, so every lane
/// of the device shares its clock, and their spans order as the device ran
/// them.
///
/// An anchor is recorded by a worker, which spins for it at most kSpinNs,
/// 200 us (an idle stream runs it at once), and never waits for the device's
/// queued work: an anchor not done by then stays pending, and every later
/// call polls it. Its reading is then too wide to be used, but its place on
/// the device's clock is. Placing an event polls first, so an anchor the
/// device has passed is on the map before any event after it is placed.
/// The first anchor is used only with a usable reading (it is recorded
/// again 10 ms later, and taken whatever its reading at the tenth try);
/// ops traced before it exists keep their launch times.
struct DeviceClock {
  static constexpr std::int64_t kRenewNs = 1'000'000'000;  // a new anchor when the newest is older
  static constexpr std::int64_t kFirstRetryNs = 10'000'000;
  // No longer than a usable reading's window (less the reads around it).
  static constexpr std::int64_t kSpinNs = ClockMap::kMaxWindowNs - 20'000;
  // A first anchor refused this many times for its wide reading (a device
  // whose queues are all busy) is taken anyway; later readings bend the
  // map back toward the host.
  static constexpr int kFirstTries = 10;

  std::mutex m;  // guards all below; the CUDA calls on the anchors' events are made under it
  ClockMap map;
  std::uint64_t valid_from = 0;  // anchors below lost their event to a newer one
  bool pending = false;          // anchor `next()` is recorded, not yet seen done
  std::uint64_t generation = 0;  // of recordings, so a late spinner finishes only its own
  std::int64_t pending_before = 0;
  std::int64_t last_try_ns = 0;  // of a recording
  int first_refused = 0;         // first anchors refused for their reading
  std::uint64_t link_failures = 0;  // anchors dropped: their interval to the previous one was not given
  cudaStream_t stream = nullptr;
  cudaEvent_t events[ClockMap::kKeep]{};  // anchor k's is events[k % kKeep]

  cudaEvent_t event(std::uint64_t k) const { return events[k % ClockMap::kKeep]; }
  std::uint64_t next() const { return map.empty() ? 0 : map.newest() + 1; }

  /// The pending anchor was seen done at `after`: on the map (m held). The
  /// first anchor needs a usable reading.
  void finish_pending(std::int64_t after) {
    pending = false;
    const std::uint64_t k = next();
    if (k == 0) {
      if (after - pending_before <= ClockMap::kMaxWindowNs || ++first_refused >= kFirstTries)
        map.add(0, pending_before, after);
      return;
    }
    float ms = 0;
    if (cudaEventElapsedTime(&ms, event(k - 1), event(k)) != cudaSuccess) {
      cudaGetLastError();  // not the next launch's error; the next renewal tries again
      ++link_failures;
      return;
    }
    map.add(static_cast<double>(ms) * 1e6, pending_before, after);
  }

  /// Polls the pending anchor (m held).
  void poll_pending() {
    if (!pending) return;
    const cudaError_t r = cudaEventQuery(event(next()));
    if (r == cudaSuccess) {
      finish_pending(steady_ns());
    } else if (r != cudaErrorNotReady) {
      cudaGetLastError();
      pending = false;
    }
  }

  /// The anchor a traced op recorded now is timed against, renewing it
  /// when it is older than kRenewNs (a worker); false while the device has
  /// none yet.
  bool current(std::uint64_t& k) {
    std::unique_lock<std::mutex> lock(m);
    poll_pending();
    const std::int64_t now = steady_ns();
    const std::int64_t wait = map.empty() ? kFirstRetryNs : kRenewNs;
    if (!pending && (map.empty() || now - map.newest_host_ns() >= kRenewNs) && now - last_try_ns >= wait) {
      last_try_ns = now;
      const std::uint64_t n = next();
      // Its event slot held anchor n - kKeep: no span may use that one now.
      if (n >= ClockMap::kKeep) valid_from = std::max(valid_from, n - ClockMap::kKeep + 1);
      pending_before = steady_ns();
      if (cudaEventRecord(event(n), stream) == cudaSuccess) {
        pending = true;
        const std::uint64_t mine = ++generation;
        lock.unlock();
        bool done = false;
        for (;;) {
          const cudaError_t r = cudaEventQuery(event(n));
          if (r == cudaSuccess) {
            done = true;
            break;
          }
          if (r != cudaErrorNotReady) {
            cudaGetLastError();  // not the next launch's error; the poll drops the anchor
            break;
          }
          if (steady_ns() - pending_before >= kSpinNs) break;
        }
        const std::int64_t after = steady_ns();
        lock.lock();
        if (done && pending && generation == mine) finish_pending(after);
      } else {
        cudaGetLastError();
      }
    }
    if (map.empty()) return false;
    k = map.newest();
    return true;
  }

  /// Host times of events `b` and `e` (complete) of an op recorded with
  /// anchor `k` current.
  bool place(std::uint64_t k, cudaEvent_t b, cudaEvent_t e, std::int64_t& start_ns, std::int64_t& end_ns) {
    std::lock_guard<std::mutex> lock(m);
    poll_pending();  // an anchor the device has passed goes on the map before any later event is placed
    if (k < valid_from) return false;
    auto at = [&](cudaEvent_t x, std::int64_t& host_ns) {
      auto elapsed = [&](std::uint64_t j, double& ns) {
        float ms = 0;
        if (j < valid_from || cudaEventElapsedTime(&ms, event(j), x) != cudaSuccess) {
          cudaGetLastError();
          return false;
        }
        ns = static_cast<double>(ms) * 1e6;
        return true;
      };
      return map.place(k, elapsed, host_ns);
    };
    return at(b, start_ns) && at(e, end_ns);
  }
};

namespace {

struct Clocks {
  std::mutex m;
  std::map<int, DeviceClock*> by_device;
};
Clocks& clocks() {
  static auto* c = new Clocks();  // never freed: lanes may outlive statics
  return *c;
}

/// The clock of `device` (its stream and events; its first anchor comes
/// with the first traced op); null when they cannot be made (tried again
/// at the next lane's first traced op). Waits for nothing on the device.
DeviceClock* device_clock(int device) {
  std::lock_guard<std::mutex> lock(clocks().m);
  auto it = clocks().by_device.find(device);
  if (it != clocks().by_device.end()) return it->second;
  auto c = std::make_unique<DeviceClock>();
  bool ok = false;
  try {
    DeviceGuard on(device);
    ok = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking) == cudaSuccess;
    for (auto& e : c->events) ok = ok && cudaEventCreate(&e) == cudaSuccess;
  } catch (const std::exception&) {
    ok = false;
  }
  if (!ok) {
    cudaGetLastError();
    for (auto& e : c->events)
      if (e && cudaEventDestroy(e) != cudaSuccess) cudaGetLastError();
    if (c->stream && cudaStreamDestroy(c->stream) != cudaSuccess) cudaGetLastError();
    return nullptr;
  }
  return clocks().by_device.emplace(device, c.release()).first->second;
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
  return clock_->place(anchor_of_[seq % kRing], ev(begin_[seq % kRing]), ev(end_[seq % kRing]), start_ns, end_ns);
}

}  // namespace tide::backend::cuda_impl

namespace tide::backend {

bool clock_report(int device, ClockReport& out) {
  cuda_impl::DeviceClock* c = nullptr;
  {
    std::lock_guard<std::mutex> lock(cuda_impl::clocks().m);
    auto it = cuda_impl::clocks().by_device.find(device);
    if (it == cuda_impl::clocks().by_device.end()) return false;
    c = it->second;
  }
  std::lock_guard<std::mutex> lock(c->m);
  out.anchors = c->map.anchors();
  out.readings_used = c->map.readings_used();
  out.readings_ignored = c->map.readings_ignored();
  out.last_residual_ns = c->map.last_residual_ns();
  out.max_residual_ns = c->map.max_residual_ns();
  out.link_failures = c->link_failures;
  return true;
}

std::unique_ptr<Lane> make_lane(int device, StreamKind kind) {
  return std::make_unique<cuda_impl::CudaLane>(device, kind);
}

}  // namespace tide::backend
