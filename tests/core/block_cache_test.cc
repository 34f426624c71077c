// The host-side cache of GPU blocks (block_cache.h), over a fake pool: the
// size classes, reuse without a call to the pool, the limit, and the flush
// when the pool runs out.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "block_cache.h"

namespace tide {
namespace {

/// A pool of `capacity` bytes that records every call.
struct FakePool final : BlockCache::Source {
  std::uint64_t capacity = ~std::uint64_t{0};
  std::uint64_t held = 0;  // taken and not given back
  std::uint64_t pending = 0;  // given back, not yet settled
  int takes = 0, gives = 0, settles = 0;
  std::map<void*, std::size_t> live;

  void* take(std::size_t bytes) override {
    if (held + pending + bytes > capacity) return nullptr;
    ++takes;
    void* p = std::malloc(bytes);
    live[p] = bytes;
    held += bytes;
    return p;
  }
  void give(void* block, std::size_t bytes) noexcept override {
    ++gives;
    auto it = live.find(block);
    if (it == live.end() || it->second != bytes) std::abort();  // a block or size the pool never gave
    live.erase(it);
    std::free(block);
    held -= bytes;
    pending += bytes;
  }
  void settle() noexcept override {
    ++settles;
    pending = 0;
  }
  ~FakePool() override {
    for (auto& [p, n] : live) std::free(p);
  }
};

TEST(BlockCache, ClassSizesRoundUpByAtMostAnEighthOrTwoMiB) {
  EXPECT_EQ(BlockCache::class_size(0), 512u);
  EXPECT_EQ(BlockCache::class_size(1), 512u);
  EXPECT_EQ(BlockCache::class_size(512), 512u);
  EXPECT_EQ(BlockCache::class_size(513), 1024u);
  EXPECT_EQ(BlockCache::class_size(1 << 20), std::size_t{1} << 20);
  EXPECT_EQ(BlockCache::class_size((1 << 20) + 1), (std::size_t{1} << 20) + (std::size_t{1} << 17));
  EXPECT_EQ(BlockCache::class_size(std::size_t{1} << 30), std::size_t{1} << 30);
  EXPECT_EQ(BlockCache::class_size((std::size_t{300} << 20) + 1), (std::size_t{302} << 20));
  for (std::size_t n : {std::size_t{1000}, std::size_t{4'000'000}, std::size_t{3} << 28, std::size_t{1} << 40,
                        (std::size_t{75} << 30) + 12345}) {
    const std::size_t c = BlockCache::class_size(n);
    EXPECT_GE(c, n);
    EXPECT_EQ(BlockCache::class_size(c), c) << "a class size is its own class";
    if (n > (1 << 20)) {
      EXPECT_LE(c - n, n / 8) << n;
    }
    if (n > (std::size_t{256} << 20)) {
      EXPECT_LT(c - n, std::size_t{2} << 20) << n;
    }
  }
}

TEST(BlockCache, AFreedBlockIsHandedOutAgainWithoutThePool) {
  FakePool pool;
  BlockCache cache(pool, ~std::uint64_t{0});
  void* a = cache.allocate(1000);
  ASSERT_NE(a, nullptr);
  cache.release(a, 1000);
  EXPECT_EQ(pool.gives, 0);
  void* b = cache.allocate(900);  // the same class (1024)
  EXPECT_EQ(b, a);
  EXPECT_EQ(pool.takes, 1);
  void* c = cache.allocate(2000);  // another class: from the pool
  EXPECT_NE(c, a);
  EXPECT_EQ(pool.takes, 2);
  const BlockCache::Stats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.in_use_bytes, 1024u + 2048u);
  EXPECT_EQ(s.cached_bytes, 0u);
  cache.release(b, 900);
  cache.release(c, 2000);
  EXPECT_EQ(cache.stats().in_use_bytes, 0u);
  EXPECT_EQ(cache.stats().cached_bytes, 3072u);
}

TEST(BlockCache, ManyBlocksOfOneClassAreAllDistinctAndAllReused) {
  FakePool pool;
  BlockCache cache(pool, ~std::uint64_t{0});
  std::vector<void*> blocks;
  for (int i = 0; i < 100; ++i) blocks.push_back(cache.allocate(4096));
  EXPECT_EQ(std::set<void*>(blocks.begin(), blocks.end()).size(), 100u);
  for (void* b : blocks) cache.release(b, 4096);
  std::set<void*> again;
  for (int i = 0; i < 100; ++i) again.insert(cache.allocate(4096));
  EXPECT_EQ(again, std::set<void*>(blocks.begin(), blocks.end()));
  EXPECT_EQ(pool.takes, 100);
  for (void* b : again) cache.release(b, 4096);
}

TEST(BlockCache, BlocksPastTheLimitGoBackToThePool) {
  FakePool pool;
  BlockCache cache(pool, 2048);  // room for two 1 KiB blocks
  void* a = cache.allocate(1024);
  void* b = cache.allocate(1024);
  void* c = cache.allocate(1024);
  cache.release(a, 1024);
  cache.release(b, 1024);
  EXPECT_EQ(pool.gives, 0);
  cache.release(c, 1024);
  EXPECT_EQ(pool.gives, 1);
  EXPECT_EQ(cache.stats().cached_bytes, 2048u);
  BlockCache none(pool, 0);  // a limit of 0 keeps nothing, and rounds to 512 bytes only
  void* d = none.allocate(10);
  EXPECT_EQ(pool.live[d], 512u);
  none.release(d, 10);
  EXPECT_EQ(pool.gives, 2);
  EXPECT_EQ(none.stats().cached_bytes, 0u);
  void* e = cache.allocate(5000);  // a class (5120) within the limit
  EXPECT_EQ(pool.live[e], 5120u);
  BlockCache small(pool, 4096);
  void* f = small.allocate(1'500'000);  // its class (1.5 MiB) is past the limit: 512-byte units
  EXPECT_EQ(pool.live[f], 1'500'160u);
  small.release(f, 1'500'000);
  cache.release(e, 5000);
}

TEST(BlockCache, APoolOutOfMemoryGetsTheCachedBlocksBackAndIsAskedAgain) {
  FakePool pool;
  pool.capacity = 8192;
  BlockCache cache(pool, ~std::uint64_t{0});
  void* a = cache.allocate(4096);
  void* b = cache.allocate(4096);
  ASSERT_NE(b, nullptr);
  cache.release(a, 4096);
  cache.release(b, 4096);
  // 8 KiB of another class: only after the cached 4 KiB blocks went back.
  void* c = cache.allocate(8192);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(pool.gives, 2);
  EXPECT_EQ(pool.settles, 1);
  EXPECT_EQ(cache.stats().flushes, 1u);
  EXPECT_EQ(cache.stats().cached_bytes, 0u);
  // Nothing left to give back: the pool settles once more, then refuses.
  EXPECT_EQ(cache.allocate(512), nullptr);
  EXPECT_EQ(pool.settles, 2);
  EXPECT_EQ(cache.stats().flushes, 1u);
  EXPECT_EQ(cache.stats().in_use_bytes, 8192u);
  cache.release(c, 8192);
}

TEST(BlockCache, EmptyGivesEveryCachedBlockBack) {
  FakePool pool;
  BlockCache cache(pool, ~std::uint64_t{0});
  for (std::size_t n : {100, 5000, 70000, 3 << 20}) cache.release(cache.allocate(n), n);
  EXPECT_GT(cache.stats().cached_bytes, 0u);
  cache.empty();
  EXPECT_EQ(pool.gives, 4);
  EXPECT_TRUE(pool.live.empty());
  EXPECT_EQ(cache.stats().cached_bytes, 0u);
}

}  // namespace
}  // namespace tide
