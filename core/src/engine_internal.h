// Pieces shared by the engine front half (engine.cc) and the backends.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include <tide/core/engine.h>

#include "error_log.h"
#include "trace_buffer.h"

namespace tide {

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// What one stream's worker has run: one writer (that worker, or the
/// frontend for the naive engine), read by stats() and take_trace().
struct StreamCounters {
  static constexpr std::size_t kMaxTrace = TraceBuffer::kMaxHeld;
  /// `trace_settles`: a GPU stream of the async engine, whose events wait
  /// for the device's times (TraceBuffer).
  explicit StreamCounters(bool trace_settles) : trace(trace_settles) {}
  alignas(64) std::atomic<std::uint64_t> ops{0};
  std::atomic<std::int64_t> busy_ns{0};
  TraceBuffer trace;
  // What the worker does, for the flight recorder (Engine::activity):
  // written by the worker only, read by anyone (a signal handler included).
  std::atomic<const char*> running{nullptr}, last{nullptr};
  std::atomic<std::int64_t> running_since{0}, last_end{0};
};

/// Counters written by workers and the frontend, read by stats().
/// The frontend's counters have one writer (the frontend) and sit apart from
/// the workers' ones, so the hot path shares no written cache line.
struct Engine::Counters {
  // Written by the frontend only.
  alignas(64) std::atomic<std::uint64_t> pushed{0}, cross_stream_waits{0};
  // The peaks also by stats() (any thread), both through note_peak.
  std::atomic<std::uint64_t> peak_queued_ops{0}, peak_queued_bytes{0};
  std::atomic<std::uint64_t> stalls{0}, stalls_steps{0}, stalls_ops{0}, stalls_bytes{0};
  std::atomic<bool> stalling{false};  // written by the frontend around a stall
  std::atomic<std::int64_t> stalled_ns{0};
  std::atomic<std::uint64_t> steps_begun{0}, peak_inflight_steps{0};
  // Written by workers (rarely: failures).
  alignas(64) std::atomic<std::uint64_t> failed{0}, skipped{0};

  /// One writer: a load and a store, no locked instruction.
  static void bump(std::atomic<std::uint64_t>& a) {
    a.store(a.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // Guarded by mutex: rare paths (blockers wait anyway; errors are failures).
  std::mutex mutex;
  using SiteKey = std::tuple<const char*, std::uint32_t, std::uint32_t, const char*>;
  struct Site {
    const char* kind;
    Loc loc;
    std::uint64_t count = 0;
    std::int64_t ns = 0;
  };
  std::map<SiteKey, Site> sites;
  std::uint64_t blockers = 0;
  std::int64_t blocked_ns = 0;
  ErrorLog errors;  // not yet reported at a barrier
  /// Per device slot: the first GPU fault recorded on it (sticky).
  std::vector<std::shared_ptr<const OpProvenance>> device_failures;
  std::vector<FrontendEvent> frontend_trace;  // under `mutex`

  /// One per stream index (devices x stream kinds), fixed at construction.
  std::vector<std::unique_ptr<StreamCounters>> streams;

  /// Frontend only (one writer).
  /// Raises `peak` to `v` (a compare-exchange, so that the frontend and
  /// stats() on another thread never lower each other's value); costs a
  /// load when `v` is not above it.
  static void note_peak(std::atomic<std::uint64_t>& peak, std::uint64_t v) {
    std::uint64_t cur = peak.load(std::memory_order_relaxed);
    while (v > cur && !peak.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
  }
  void add_stall(std::atomic<std::uint64_t>& kind, std::int64_t ns) {
    bump(stalls);
    bump(kind);
    stalled_ns.store(stalled_ns.load(std::memory_order_relaxed) + ns, std::memory_order_relaxed);
  }
};

std::unique_ptr<Engine> make_async_engine(const EngineOptions& options);
std::unique_ptr<Engine> make_naive_engine(const EngineOptions& options);

}  // namespace tide
