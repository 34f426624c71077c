// BlockCache: a host-side cache of one GPU's storage blocks, by size class
// (internal to core/).
//
// A GPU storage is freed only once every op that used it has completed (a
// queued op holds its storages), so its block is free on every stream at
// once. Keeping it here, on the host, and handing it to the next storage of
// its size class costs a mutex and a map lookup; going back to the driver's
// pool costs two CUDA calls per op (allocate at the push, free at the
// reclaim), each taking the driver's locks that the workers' launches take
// too. The cache talks to its Source (the pool) only on a miss, when it is
// over its limit, and when the Source runs out of memory (then it gives
// everything back and asks again).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tide {

class BlockCache {
 public:
  /// Where blocks come from: a GPU's memory pool.
  struct Source {
    /// A block of `bytes`; nullptr when the device has no room (other
    /// failures throw).
    virtual void* take(std::size_t bytes) = 0;
    /// Gives back a block take() returned.
    virtual void give(void* block, std::size_t bytes) noexcept = 0;
    /// Waits until the blocks given so far can be taken again.
    virtual void settle() noexcept = 0;
    virtual ~Source() = default;
  };

  struct Stats {
    std::uint64_t in_use_bytes = 0;  // handed out to storages (class sizes)
    std::uint64_t cached_bytes = 0;  // kept here for reuse
    std::uint64_t hits = 0, misses = 0;
    std::uint64_t flushes = 0;  // times the cache gave everything back to satisfy a request
  };

  /// The size class of a request of `nbytes`: whole 512-byte units up to
  /// 1 MiB (512 for 0 bytes), then eight classes per power of two (at most
  /// an eighth more than asked) up to 256 MiB, then whole 2 MiB.
  static std::size_t class_size(std::size_t nbytes);
  /// The block a request of `nbytes` gets: its class, or whole 512-byte
  /// units when the class is more than the cache may ever keep (no rounding
  /// up of a block that goes straight back to the Source).
  std::size_t block_size(std::size_t nbytes) const;

  /// `limit_bytes`: the most this cache keeps of freed blocks; a block that
  /// would pass it goes back to the Source at once.
  BlockCache(Source& source, std::uint64_t limit_bytes) : source_(source), limit_(limit_bytes) {}
  ~BlockCache() { empty(); }
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  /// A block of block_size(nbytes): a cached one, else the Source's; when
  /// the Source has no room, every cached block goes back to it, it settles,
  /// and it is asked once more. nullptr when it still has none.
  void* allocate(std::size_t nbytes);
  /// Takes back a block allocate(nbytes) returned (its last use completed).
  void release(void* block, std::size_t nbytes) noexcept;
  /// Gives every cached block back to the Source.
  void empty() noexcept;
  Stats stats() const;

 private:
  void give_all_back();  // mutex_ held

  Source& source_;
  const std::uint64_t limit_;
  mutable std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;  // by class size
  Stats stats_;
};

}  // namespace tide
