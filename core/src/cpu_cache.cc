#include "cpu_cache.h"

#include <array>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <tide/core/cpu_cache.h>
#include <tide/core/device.h>
#include <tide/core/error.h>

#include "memory.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// A cached block is poisoned: a use after its storage died is still caught.
#define TIDE_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define TIDE_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define TIDE_POISON(p, n) ((void)(p), (void)(n))
#define TIDE_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace tide::cpu_cache {

namespace {

/// TIDE_CPU_CACHE_MB, or the default: a sixteenth of RAM and swap, at most
/// 1 GiB. Read once; a bad value throws at every allocation (the static is
/// not set while its initializer throws).
std::uint64_t limit_bytes() {
  static const std::uint64_t limit = [] {
    if (const auto mb = memory::whole_number_env("TIDE_CPU_CACHE_MB", "MiB (0 turns the cache off)")) return *mb << 20;
    const std::uint64_t sixteenth = memory::host_memory_bytes() / 16;
    return sixteenth < (1ull << 30) ? sixteenth : std::uint64_t{1} << 30;
  }();
  return limit;
}

struct Device {
  std::mutex mutex;
  std::unordered_map<std::size_t, std::vector<void*>> free;  // by class size
  CpuCacheStats stats;

  void drop_all() {  // mutex held
    for (auto& [size, blocks] : free)
      for (void* b : blocks) {
        TIDE_UNPOISON(b, size);
        std::free(b);
      }
    free.clear();
    stats.cached_bytes = 0;
  }
};

/// Never destroyed: storages may die during static destruction.
std::array<Device, kMaxCpuDevices>& devices() {
  static auto* d = new std::array<Device, kMaxCpuDevices>();
  return *d;
}

}  // namespace

std::size_t class_size(std::size_t nbytes) {
  std::size_t r = (nbytes + 63) / 64 * 64;
  if (r == 0) r = 64;
  if (r <= 1024) return r;
  const int k = 63 - __builtin_clzll(static_cast<unsigned long long>(r - 1));  // 2^k < r <= 2^(k+1)
  const std::size_t step = std::size_t{1} << (k - 2);
  return (r + step - 1) / step * step;
}

namespace {
/// class_size, or whole cache lines for a block the cache could never keep
/// (no rounding up of a huge block).
std::size_t block_size(std::size_t nbytes) {
  const std::size_t size = class_size(nbytes);
  return size <= limit_bytes() ? size : (nbytes + 63) / 64 * 64;
}
}  // namespace

void* allocate(int device, std::size_t nbytes) {
  const std::size_t size = block_size(nbytes);  // a bad TIDE_CPU_CACHE_MB throws here
  Device& d = devices()[static_cast<std::size_t>(device)];
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    if (auto it = d.free.find(size); it != d.free.end() && !it->second.empty()) {
      void* b = it->second.back();
      it->second.pop_back();
      d.stats.cached_bytes -= size;
      d.stats.hits++;
      d.stats.in_use_bytes += size;
      if (d.stats.in_use_bytes > d.stats.peak_in_use_bytes) d.stats.peak_in_use_bytes = d.stats.in_use_bytes;
      TIDE_UNPOISON(b, size);
      return b;
    }
  }
  void* b = std::aligned_alloc(64, size);
  std::lock_guard<std::mutex> lock(d.mutex);
  if (!b) {
    // Memory the cache holds may be what the system lacks.
    d.drop_all();
    b = std::aligned_alloc(64, size);
    if (!b) return nullptr;
  }
  d.stats.misses++;
  d.stats.in_use_bytes += size;
  if (d.stats.in_use_bytes > d.stats.peak_in_use_bytes) d.stats.peak_in_use_bytes = d.stats.in_use_bytes;
  return b;
}

void release(int device, void* block, std::size_t nbytes) {
  const std::size_t size = block_size(nbytes);
  Device& d = devices()[static_cast<std::size_t>(device)];
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    d.stats.in_use_bytes -= size;
    if (d.stats.cached_bytes + size <= limit_bytes()) {
      d.free[size].push_back(block);
      d.stats.cached_bytes += size;
      TIDE_POISON(block, size);
      return;
    }
  }
  std::free(block);
}

}  // namespace tide::cpu_cache

namespace tide {

CpuCacheStats cpu_cache_stats(int device) {
  if (device < 0 || device >= kMaxCpuDevices)
    throw DeviceError("cpu:" + std::to_string(device) + " is not a CPU device (at most " +
                      std::to_string(kMaxCpuDevices) + ")");
  auto& d = cpu_cache::devices()[static_cast<std::size_t>(device)];
  std::lock_guard<std::mutex> lock(d.mutex);
  CpuCacheStats s = d.stats;
  s.limit_bytes = cpu_cache::limit_bytes();
  return s;
}

void empty_cpu_cache() {
  for (auto& d : cpu_cache::devices()) {
    std::lock_guard<std::mutex> lock(d.mutex);
    d.drop_all();
  }
}

}  // namespace tide
