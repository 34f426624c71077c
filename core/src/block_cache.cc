#include "block_cache.h"

namespace tide {

std::size_t BlockCache::class_size(std::size_t nbytes) {
  constexpr std::size_t kUnit = 512, kSmall = std::size_t{1} << 20;
  if (nbytes <= kUnit) return kUnit;
  if (nbytes <= kSmall) return (nbytes + kUnit - 1) / kUnit * kUnit;
  const int k = 63 - __builtin_clzll(static_cast<unsigned long long>(nbytes - 1));  // 2^k < nbytes <= 2^(k+1)
  const std::size_t step = std::size_t{1} << (k - 3);
  return (nbytes + step - 1) / step * step;
}

void* BlockCache::allocate(std::size_t nbytes) {
  const std::size_t size = class_size(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = free_.find(size); it != free_.end() && !it->second.empty()) {
    void* b = it->second.back();
    it->second.pop_back();
    stats_.cached_bytes -= size;
    stats_.in_use_bytes += size;
    stats_.hits++;
    return b;
  }
  // Under the lock: a flush below must not race another thread's take.
  void* b = source_.take(size);
  if (!b && stats_.cached_bytes > 0) {
    // The blocks cached in other classes may be what the device lacks.
    give_all_back();
    stats_.flushes++;
    source_.settle();
    b = source_.take(size);
  }
  if (!b) return nullptr;
  stats_.in_use_bytes += size;
  stats_.misses++;
  return b;
}

void BlockCache::release(void* block, std::size_t nbytes) noexcept {
  if (!block) return;
  const std::size_t size = class_size(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.in_use_bytes -= size;
  if (stats_.cached_bytes + size <= limit_) {
    try {
      free_[size].push_back(block);
      stats_.cached_bytes += size;
      return;
    } catch (...) {  // no memory for the list: the block goes back instead
    }
  }
  source_.give(block, size);
}

void BlockCache::give_all_back() {
  for (auto& [size, blocks] : free_)
    for (void* b : blocks) source_.give(b, size);
  free_.clear();
  stats_.cached_bytes = 0;
}

void BlockCache::empty() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  give_all_back();
}

BlockCache::Stats BlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace tide
