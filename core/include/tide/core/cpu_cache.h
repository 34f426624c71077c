// The caching allocator of CPU storages: what it holds, and how to empty it.
#pragma once

#include <cstdint>

namespace tide {

/// One CPU device's allocator. A storage's block goes back to the cache
/// when the storage's last reference drops (queued ops hold references, so
/// no op can still use it) and serves the next allocation of its size
/// class. Freed blocks beyond the cache's limit (TIDE_CPU_CACHE_MB, per
/// device) go back to the system.
struct CpuCacheStats {
  std::uint64_t in_use_bytes = 0;       // blocks held by live storages (class sizes)
  std::uint64_t peak_in_use_bytes = 0;  // since the process began
  std::uint64_t cached_bytes = 0;       // free blocks kept for reuse
  std::uint64_t limit_bytes = 0;        // most cached_bytes may reach
  std::uint64_t hits = 0;               // allocations served from the cache
  std::uint64_t misses = 0;             // allocations the system served
};

/// cpu:`device`'s allocator (throws tide::DeviceError outside [0, kMaxCpuDevices)).
CpuCacheStats cpu_cache_stats(int device);
/// Returns every cached block of every CPU device to the system.
void empty_cpu_cache();

}  // namespace tide
