// Cross-stream and cross-device ordering: RAW, WAR, WAW become event waits;
// barriers wait only for what they name. Latches, not sleeps, make the
// dangerous interleaving happen: the first op is held until the second one
// has been pushed, so without a dependency edge the second would run first.
#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace tide::test {
namespace {

constexpr auto kCompute = StreamKind::compute;
constexpr auto kCopy = StreamKind::copy;
constexpr auto kComm = StreamKind::comm;

struct Placement {
  Device first_device;
  StreamKind first_stream;
  Device second_device;
  StreamKind second_stream;
};

class CrossStream : public ::testing::TestWithParam<Placement> {};

TEST_P(CrossStream, ReadAfterWriteWaitsForTheWriter) {
  EngineFixture e(EngineKind::async, 2);
  auto p = GetParam();
  auto x = buffer(*e, p.first_device), y = buffer(*e, p.second_device);
  std::latch hold(1);
  push(*e, "write_x", p.first_device, p.first_stream, {}, {x}, [&](const OpContext& c) {
    hold.wait();
    *c.out<std::int64_t>(0) = 41;
  });
  push(*e, "read_x", p.second_device, p.second_stream, {x}, {y},
       [](const OpContext& c) { *c.out<std::int64_t>(0) = *c.in<std::int64_t>(0) + 1; });
  hold.count_down();
  e->wait_for(*y);
  EXPECT_EQ(*values(y), 42);
}

TEST_P(CrossStream, WriteAfterReadWaitsForTheReader) {
  EngineFixture e(EngineKind::async, 2);
  auto p = GetParam();
  auto x = buffer(*e, p.first_device), y = buffer(*e, p.first_device);
  push(*e, "init_x", p.first_device, p.first_stream, {}, {x},
       [](const OpContext& c) { *c.out<std::int64_t>(0) = 7; });
  std::latch hold(1);
  push(*e, "read_x", p.first_device, p.first_stream, {x}, {y}, [&](const OpContext& c) {
    hold.wait();
    *c.out<std::int64_t>(0) = *c.in<std::int64_t>(0);
  });
  push(*e, "overwrite_x", p.second_device, p.second_stream, {}, {x},
       [](const OpContext& c) { *c.out<std::int64_t>(0) = 99; });
  hold.count_down();
  e->wait_all();
  EXPECT_EQ(*values(y), 7) << "the overwrite ran before the earlier read";
  EXPECT_EQ(*values(x), 99);
}

TEST_P(CrossStream, WriteAfterWriteKeepsTheLastWrite) {
  EngineFixture e(EngineKind::async, 2);
  auto p = GetParam();
  auto x = buffer(*e, p.first_device);
  std::latch hold(1);
  push(*e, "first_write", p.first_device, p.first_stream, {}, {x}, [&](const OpContext& c) {
    hold.wait();
    *c.out<std::int64_t>(0) = 1;
  });
  push(*e, "second_write", p.second_device, p.second_stream, {}, {x},
       [](const OpContext& c) { *c.out<std::int64_t>(0) = 2; });
  hold.count_down();
  e->wait_for(*x);
  EXPECT_EQ(*values(x), 2);
}

INSTANTIATE_TEST_SUITE_P(
    Engine, CrossStream,
    ::testing::Values(Placement{cpu(0), kCompute, cpu(0), kCopy},
                      Placement{cpu(0), kCopy, cpu(0), kComm},
                      Placement{cpu(0), kCompute, cpu(1), kCompute},
                      Placement{cpu(1), kComm, cpu(0), kCopy},
                      Placement{cpu(0), kCompute, cpu(0), kCompute}));

TEST(Ordering, OneStreamRunsInPushOrder) {
  EngineFixture e;
  std::vector<int> seen;
  for (int i = 0; i < 2000; ++i)
    push(*e, "append", cpu(0), kCompute, {}, {}, [&seen, i](const OpContext&) { seen.push_back(i); });
  e->wait_all();
  ASSERT_EQ(seen.size(), 2000u);
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(seen[static_cast<std::size_t>(i)], i);
}

TEST(Ordering, IndependentStreamsRunConcurrently) {
  // Two ops that each wait for the other to start can only both finish if
  // their streams run at the same time.
  EngineFixture e;
  std::latch both_started(2);
  push(*e, "a", cpu(0), kCompute, {}, {}, [&](const OpContext&) { both_started.arrive_and_wait(); });
  push(*e, "b", cpu(0), kCopy, {}, {}, [&](const OpContext&) { both_started.arrive_and_wait(); });
  e->wait_all();
  SUCCEED();
}

TEST(Barriers, WaitToReadReturnsWhileUnrelatedWorkStillRuns) {
  EngineFixture e;
  auto z = buffer(*e);
  std::latch release(1);
  std::atomic<bool> unrelated_done{false};
  push(*e, "unrelated", cpu(0), kCopy, {}, {}, [&](const OpContext&) {
    release.wait();
    unrelated_done = true;
  });
  push(*e, "produce_z", cpu(0), kCompute, {}, {z}, [](const OpContext& c) { *c.out<std::int64_t>(0) = 5; });
  e->wait_for(*z);  // would hang here if it waited for the held op too
  EXPECT_EQ(*values(z), 5);
  EXPECT_FALSE(unrelated_done.load());
  release.count_down();
  e->wait_all();
  EXPECT_TRUE(unrelated_done.load());
}

TEST(Barriers, WaitAllWaitsForEveryStreamOfEveryDevice) {
  EngineFixture e(EngineKind::async, 4);
  std::atomic<int> ran{0};
  for (int d = 0; d < 4; ++d)
    for (auto k : {kCompute, kCopy, kComm})
      for (int i = 0; i < 50; ++i)
        push(*e, "count", cpu(d), k, {}, {}, [&](const OpContext&) {
          busy_us(5);
          ran.fetch_add(1);
        });
  e->wait_all();
  EXPECT_EQ(ran.load(), 4 * 3 * 50);
  EXPECT_EQ(e->stats().queued_ops, 0u);
}

TEST(Barriers, BlockersAreCountedWithTheirCallSite) {
  EngineFixture e;
  auto x = buffer(*e);
  push(*e, "w", cpu(0), kCompute, {}, {x}, [](const OpContext& c) { *c.out<std::int64_t>(0) = 1; });
  for (int i = 0; i < 3; ++i) e->wait_for(*x);
  e->wait_all();
  Stats s = e->stats();
  EXPECT_EQ(s.blockers, 4u);
  ASSERT_EQ(s.blocker_sites.size(), 2u);
  bool found = false;
  for (const auto& b : s.blocker_sites)
    if (b.kind == std::string("wait_to_read")) {
      found = true;
      EXPECT_EQ(b.count, 3u);
      EXPECT_NE(b.call_site.find("engine_ordering_test.cc"), std::string::npos) << b.call_site;
    }
  EXPECT_TRUE(found);
}

TEST(Dependencies, OnlyCrossStreamEdgesBecomeWaits) {
  EngineFixture e;
  auto x = buffer(*e);
  std::latch hold(1);
  push(*e, "w0", cpu(0), kCompute, {}, {x}, [&](const OpContext&) { hold.wait(); });
  push(*e, "w1", cpu(0), kCompute, {x}, {x}, [](const OpContext&) {});
  EXPECT_EQ(e->stats().cross_stream_waits, 0u);
  push(*e, "r", cpu(0), kCopy, {x}, {}, [](const OpContext&) {});
  EXPECT_EQ(e->stats().cross_stream_waits, 1u);
  hold.count_down();
  e->wait_all();
}

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

TEST(Workers, IdleWorkersUseNoCpu) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a sanitizer's runtime uses CPU of its own; the Release run checks this";
#endif
  EngineFixture e(EngineKind::async, 4);  // 12 workers
  auto x = buffer(*e);
  for (int i = 0; i < 100; ++i)
    push(*e, "w", cpu(i % 4), kCompute, {}, {}, [](const OpContext&) {});
  e->wait_all();
  // Give the workers' short post-work spin time to end, then measure quiet
  // intervals: sleeping workers cost (nearly) nothing. On a loaded machine
  // (other tests beside this one) a spin may end late, or a thread be
  // charged a stray wake-up, so the quietest of up to five 200 ms intervals
  // is judged: a worker that keeps spinning would use about 0.2 s in each.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::string seen;
  double quietest = 1e9;
  for (int i = 0; i < 5 && quietest >= 0.02; ++i) {
    const double before = process_cpu_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const double used = process_cpu_seconds() - before;
    quietest = std::min(quietest, used);
    seen += (seen.empty() ? "" : ", ") + std::to_string(used);
  }
  EXPECT_LT(quietest, 0.02) << "12 idle workers used CPU in every 200 ms interval (s): " << seen;
}

TEST(Workers, EachStreamsWorkerIsNamedForItsDeviceAndKind) {
  EngineFixture e(EngineKind::async, 2);
  auto name_on = [&](Device device, StreamKind kind) {
    std::string name;
    push(*e, "name", device, kind, {}, {buffer(*e, device)}, [&name](const OpContext&) {
      char buf[16] = {};
      pthread_getname_np(pthread_self(), buf, sizeof buf);
      name = buf;
    });
    e->wait_all();
    return name;
  };
  EXPECT_EQ(name_on(cpu(0), kCompute), "tide-cpu0-cmp");
  EXPECT_EQ(name_on(cpu(0), kCopy), "tide-cpu0-cpy");
  EXPECT_EQ(name_on(cpu(1), kComm), "tide-cpu1-comm");
}

}  // namespace
}  // namespace tide::test
