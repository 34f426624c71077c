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

namespace tide {

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Counters written by workers and the frontend, read by stats().
struct Engine::Counters {
  std::atomic<std::uint64_t> pushed{0}, completed{0}, failed{0}, skipped{0};
  std::atomic<std::uint64_t> cross_stream_waits{0};
  std::atomic<std::uint64_t> queued_ops{0}, queued_bytes{0};
  std::atomic<std::uint64_t> peak_queued_ops{0}, peak_queued_bytes{0};
  std::atomic<std::uint64_t> stalls{0}, stalls_steps{0}, stalls_ops{0}, stalls_bytes{0};
  std::atomic<std::int64_t> stalled_ns{0};
  std::atomic<std::uint64_t> steps_begun{0}, peak_inflight_steps{0};

  // Guarded by mutex: rare paths (blockers wait anyway; errors are failures).
  std::mutex mutex;
  using SiteKey = std::tuple<const char*, std::uint32_t, std::uint32_t, const char*>;
  struct Site {
    const char* kind;
    std::source_location loc;
    std::uint64_t count = 0;
    std::int64_t ns = 0;
  };
  std::map<SiteKey, Site> sites;
  std::uint64_t blockers = 0;
  std::int64_t blocked_ns = 0;
  struct RecordedError {
    std::shared_ptr<const OpProvenance> prov;
    std::uint64_t push_index = 0;
  };
  std::vector<RecordedError> errors;  // not yet reported at a barrier

  void note_peak(std::atomic<std::uint64_t>& peak, std::uint64_t v) {
    std::uint64_t p = peak.load(std::memory_order_relaxed);
    while (v > p && !peak.compare_exchange_weak(p, v, std::memory_order_relaxed)) {
    }
  }
  void add_stall(std::atomic<std::uint64_t>& kind, std::int64_t ns) {
    stalls.fetch_add(1, std::memory_order_relaxed);
    kind.fetch_add(1, std::memory_order_relaxed);
    stalled_ns.fetch_add(ns, std::memory_order_relaxed);
  }
};

std::unique_ptr<Engine> make_async_engine(const EngineOptions& options);
std::unique_ptr<Engine> make_naive_engine(const EngineOptions& options);

}  // namespace tide
