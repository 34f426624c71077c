#include "block_cache.h"

#include <algorithm>

namespace tide {

namespace {
constexpr std::size_t kUnit = 512, kSmall = std::size_t{1} << 20, kLarge = std::size_t{256} << 20,
                      kLargeStep = std::size_t{2} << 20;
std::size_t round_up(std::size_t n, std::size_t step) { return (n + step - 1) / step * step; }
}  // namespace

std::size_t BlockCache::class_size(std::size_t nbytes) {
  if (nbytes <= kUnit) return kUnit;
  if (nbytes <= kSmall) return round_up(nbytes, kUnit);
  if (nbytes > kLarge) return round_up(nbytes, kLargeStep);
  const int k = 63 - __builtin_clzll(static_cast<unsigned long long>(nbytes - 1));  // 2^k < nbytes <= 2^(k+1)
  return round_up(nbytes, std::size_t{1} << (k - 3));
}

std::size_t BlockCache::block_size(std::size_t nbytes) const {
  const std::size_t size = class_size(nbytes);
  return size <= limit_ ? size : round_up(std::max<std::size_t>(nbytes, 1), kUnit);
}

void* BlockCache::allocate(std::size_t nbytes) {
  const std::size_t size = block_size(nbytes);
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
  if (!b) {
    // The blocks cached in other classes may be what the device lacks, and
    // the Source may hold freed memory it can return.
    if (stats_.cached_bytes > 0) {
      give_all_back();
      stats_.flushes++;
    }
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
  const std::size_t size = block_size(nbytes);
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
