// SyncPolicy: how far the frontend may run ahead of the backend.
#pragma once

#include <cstdint>
#include <string>

namespace tide {

/// Caps on queued work. A push that would cross a cap blocks (a counted,
/// timed "runahead stall") until the backend has drained below the low water
/// mark (`low_water` times the cap). Zero means unbounded.
struct SyncPolicy {
  /// The default op cap: generous, so a plain loop runs far ahead, yet it
  /// keeps a runaway loop from eating all memory.
  static constexpr std::uint64_t kDefaultMaxQueuedOps = 1u << 20;
  /// The default cap on host bytes in flight. On a CPU the backend is the
  /// bottleneck of any loop of large ops; running further ahead only makes
  /// it cycle through more memory (and, beyond the caching allocator's
  /// limit, page-fault fresh memory): outputs within this cap are reused
  /// while still in the processor's cache.
  static constexpr std::uint64_t kDefaultMaxQueuedHostBytes = 8ull << 20;

  /// Step n+k may not begin until step n has completed on every stream.
  std::uint32_t max_inflight_steps = 0;
  /// Ops pushed and not yet completed, over all streams.
  std::uint64_t max_queued_ops = kDefaultMaxQueuedOps;
  /// Bytes allocated by ops pushed and not yet completed, on any device.
  std::uint64_t max_queued_bytes = 0;
  /// The same, for ops on CPU devices' streams only.
  std::uint64_t max_queued_host_bytes = kDefaultMaxQueuedHostBytes;
  /// Resume below this fraction of a cap, in (0, 1].
  double low_water = 0.5;

  /// Throws tide::PolicyError when a field is out of range.
  void validate() const;
  std::string str() const;

  static SyncPolicy unbounded() {
    SyncPolicy p;
    p.max_queued_ops = 0;
    p.max_queued_host_bytes = 0;
    return p;
  }
  static SyncPolicy steps(std::uint32_t k) {
    SyncPolicy p;
    p.max_inflight_steps = k;
    return p;
  }
};

}  // namespace tide
