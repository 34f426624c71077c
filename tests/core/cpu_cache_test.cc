// The caching allocator of CPU storages: a freed block serves the next
// allocation of its size class, stats add up, the limit holds, a bad
// TIDE_CPU_CACHE_MB is refused.
#include <cstdlib>
#include <latch>

#include <tide/core/cpu_cache.h>

#include "cpu_cache.h"
#include "test_util.h"

namespace tide::test {
namespace {

TEST(CpuCache, ClassSizesRoundUpByAtMostAQuarter) {
  EXPECT_EQ(cpu_cache::class_size(0), 64u);
  EXPECT_EQ(cpu_cache::class_size(1), 64u);
  EXPECT_EQ(cpu_cache::class_size(65), 128u);
  EXPECT_EQ(cpu_cache::class_size(1024), 1024u);
  EXPECT_EQ(cpu_cache::class_size(1025), 1280u);
  EXPECT_EQ(cpu_cache::class_size(400000), 458752u);  // 1.75 x 2^18
  for (std::size_t n = 1; n < (std::size_t{1} << 26); n = n * 3 / 2 + 7) {
    const std::size_t c = cpu_cache::class_size(n);
    EXPECT_GE(c, n);
    EXPECT_EQ(c % 64, 0u);
    if (n > 1024) {
      EXPECT_LE(c, n + n / 4 + 64) << n;
    }
    EXPECT_EQ(cpu_cache::class_size(c), c) << "a class size is its own class";
  }
}

TEST(CpuCache, AFreedBlockServesTheNextAllocationOfItsClass) {
  EngineFixture e;
  constexpr std::size_t kBytes = 300000;
  const CpuCacheStats before = cpu_cache_stats(0);
  void* first = nullptr;
  {
    auto s = e->allocate(cpu(0), kBytes);
    first = s->data();
    const CpuCacheStats held = cpu_cache_stats(0);
    EXPECT_GE(held.in_use_bytes, before.in_use_bytes + kBytes);
    EXPECT_GE(held.peak_in_use_bytes, held.in_use_bytes);
  }
  const CpuCacheStats freed = cpu_cache_stats(0);
  EXPECT_GE(freed.cached_bytes, cpu_cache::class_size(kBytes));
  EXPECT_LE(freed.cached_bytes, freed.limit_bytes);
  // Another size of the same class gets the same block.
  auto again = e->allocate(cpu(0), kBytes - 1000);
  EXPECT_EQ(again->data(), first);
  const CpuCacheStats after = cpu_cache_stats(0);
  EXPECT_EQ(after.hits, freed.hits + 1);
  EXPECT_EQ(after.misses, freed.misses);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(again->data()) % 64, 0u);
}

TEST(CpuCache, BlocksComeBackOnlyOnceTheirLastOpHasRun) {
  EngineFixture e;
  std::latch hold(1);
  void* block = nullptr;
  {
    auto s = e->allocate(cpu(0), 1 << 20);
    block = s->data();
    push(*e, "held", cpu(0), StreamKind::compute, {}, {s}, [&](const OpContext& c) {
      hold.wait();
      static_cast<char*>(c.out<char>(0))[0] = 1;
    });
  }
  // The queued op holds the storage: its block is not free for others.
  auto other = e->allocate(cpu(0), 1 << 20);
  EXPECT_NE(other->data(), block);
  hold.count_down();
  e->wait_all();
}

TEST(CpuCache, EmptyingReturnsEveryCachedBlock) {
  EngineFixture e;
  { auto s = e->allocate(cpu(0), 100000); }
  EXPECT_GT(cpu_cache_stats(0).cached_bytes, 0u);
  empty_cpu_cache();
  EXPECT_EQ(cpu_cache_stats(0).cached_bytes, 0u);
  EXPECT_THROW(cpu_cache_stats(-1), DeviceError);
  EXPECT_THROW(cpu_cache_stats(kMaxCpuDevices), DeviceError);
}

// Run by ctest with TIDE_CPU_CACHE_MB=1 (see CMakeLists.txt).
TEST(CpuCacheLimit, FreedBlocksBeyondTheLimitGoBackToTheSystem) {
  if (const char* v = std::getenv("TIDE_CPU_CACHE_MB"); !v || std::string(v) != "1")
    GTEST_SKIP() << "run with TIDE_CPU_CACHE_MB=1";
  EngineFixture e;
  empty_cpu_cache();
  EXPECT_EQ(cpu_cache_stats(0).limit_bytes, 1u << 20);
  {
    std::vector<std::shared_ptr<Storage>> held;
    for (int i = 0; i < 8; ++i) held.push_back(e->allocate(cpu(0), 300000));
  }
  const CpuCacheStats s = cpu_cache_stats(0);
  EXPECT_LE(s.cached_bytes, 1u << 20);
  EXPECT_GT(s.cached_bytes, 0u);
}

// Run by ctest with TIDE_CPU_CACHE_MB=lots (see CMakeLists.txt).
TEST(CpuCacheLimit, ABadLimitIsRefusedNamingTheVariable) {
  if (const char* v = std::getenv("TIDE_CPU_CACHE_MB"); !v || std::string(v) != "lots")
    GTEST_SKIP() << "run with TIDE_CPU_CACHE_MB=lots";
  EngineFixture e;
  try {
    (void)e->allocate(cpu(0), 1000);
    ADD_FAILURE() << "a bad TIDE_CPU_CACHE_MB was accepted";
  } catch (const ValueError& err) {
    EXPECT_NE(std::string(err.what()).find("TIDE_CPU_CACHE_MB=lots"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace tide::test
