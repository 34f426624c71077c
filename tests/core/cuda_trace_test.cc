// The timeline on a GPU: while tracing, an op on a GPU stream spans its work
// on the device (timing events around it), not its launch. The spans of one
// device share one clock, so they prove the engine's ordering across GPU
// streams as the CPU timeline does (trace_file_test.cc). Skips without a GPU.
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include <tide/ops/creation.h>
#include <tide/ops/elementwise.h>

#include "../gpu_test_util.h"
#include "test_util.h"
#include "trace_order.h"

namespace tide::test {
namespace {

std::int64_t now_steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Turns tracing on and runs three adds (x += y) apart: the first traced
/// ops place the device's clock (its first anchor wants a narrow reading,
/// and is recorded again 10 ms later when it had none) and make the timing
/// events, outside the window a test measures. Their events are dropped.
void warm_up_tracing(Engine& e, Tensor& x, const Tensor& y) {
  e.set_tracing(true);
  for (int i = 0; i < 3; ++i) {
    add_(x, y);
    e.wait_all();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  e.take_trace();
}

/// A random program of adds over `tensors` GPU tensors on the device's
/// three streams, pushed until `ops` ops or `seconds` have passed; its
/// dependencies go into `order`. Returns the ops pushed.
int push_random_adds(Engine& e, std::vector<Tensor>& t, TraceOrder& order, std::uint32_t seed, int ops,
                     double seconds) {
  const StreamKind kinds[] = {StreamKind::compute, StreamKind::copy, StreamKind::comm};
  const int n = static_cast<int>(t.size());
  std::mt19937 rng(seed);
  auto pick = [&](int k) { return static_cast<int>(rng() % static_cast<std::uint32_t>(k)); };
  const std::int64_t until = now_steady_ns() + static_cast<std::int64_t>(seconds * 1e9);
  int pushed = 0;
  for (; pushed < ops && (seconds <= 0 || now_steady_ns() < until); ++pushed) {
    const int w = pick(n);
    const int r = (w + 1 + pick(n - 1)) % n;
    const std::uint64_t me = e.pushed();
    order.add(me, r, w);  // add_(t[w], t[r]) reads both and writes t[w]: RAW, WAW, WAR
    {
      StreamScope s(kinds[pick(3)], e);
      add_(t[static_cast<std::size_t>(w)], t[static_cast<std::size_t>(r)]);
    }
    EXPECT_EQ(e.pushed(), me + 1) << "add_ pushes one op";
  }
  return pushed;
}

TEST(CudaTrace, EveryOpStartsOnTheDeviceAfterTheEndOfEveryOpItDependsOn) {
  TIDE_REQUIRE_GPU();
  constexpr int kTensors = 5, kOps = 200;
  constexpr std::int64_t kN = std::int64_t{1} << 22;  // 16 MiB: tens of microseconds per add
  for (std::uint32_t seed = 1; seed <= 4; ++seed) {
    EngineFixture f(EngineKind::async, 1, {}, 1);
    Engine& e = *f;
    std::vector<Tensor> t;
    for (int i = 0; i < kTensors; ++i) t.push_back(zeros({kN}, {DType::f32, cuda(0)}));
    e.wait_all();
    warm_up_tracing(e, t[0], t[1]);  // every op below is timed on the device
    TraceOrder order(kTensors);
    push_random_adds(e, t, order, seed, kOps, 0);
    e.wait_all();
    const int checked = order.check(e, e.take_trace(), "seed " + std::to_string(seed));
    EXPECT_GT(checked, kOps) << "the programs must have dependencies to check";
  }
}

// Three and a half seconds of traced work: the device's clock is re-anchored
// about once a second, and ops timed against different anchors must still
// order as the device ran them, and sit where the host saw them run. The
// timeline is read while the program runs, as the trainer reads it: no
// event may come out on its launch times.
TEST(CudaTrace, OrderHoldsAcrossAnchorsAndReadersDuringTheRunGetDeviceTimes) {
  TIDE_REQUIRE_GPU();
  constexpr int kTensors = 4;
  // 64 MiB: an add reads 128 MiB and writes 64 MiB, 60 us or more on any
  // GPU, where its launch takes a few.
  constexpr std::int64_t kN = std::int64_t{1} << 24;
  // At most 2048 ops queued, so the device works for about as long as the
  // program is pushed (the default would let a minute of adds queue up).
  SyncPolicy policy;
  policy.max_queued_ops = 2048;
  EngineFixture f(EngineKind::async, 1, policy, 1);
  Engine& e = *f;
  std::vector<Tensor> t;
  for (int i = 0; i < kTensors; ++i) t.push_back(zeros({kN}, {DType::f32, cuda(0)}));
  e.wait_all();
  warm_up_tracing(e, t[0], t[1]);
  TraceOrder order(kTensors);
  const std::int64_t before = now_steady_ns();
  std::vector<TraceEvent> trace;
  int ops = 0;
  for (std::uint32_t round = 0; round < 35; ++round) {  // 0.1 s each
    ops += push_random_adds(e, t, order, 100 + round, 1 << 30, 0.1);
    for (auto& ev : e.take_trace()) trace.push_back(ev);
  }
  e.wait_all();
  const std::int64_t after = now_steady_ns();
  for (auto& ev : e.take_trace()) trace.push_back(ev);
  ASSERT_EQ(trace.size(), static_cast<std::size_t>(ops));
  const int checked = order.check(e, trace, "3.5 s of random adds");
  EXPECT_GT(checked, ops);
  for (const auto& ev : trace) {
    EXPECT_GE(ev.start_ns, before - 1'000'000) << "op #" << ev.push_index;
    EXPECT_LE(ev.end_ns, after + 1'000'000) << "op #" << ev.push_index;
    EXPECT_GE(ev.end_ns - ev.start_ns, 20'000) << "op #" << ev.push_index << ": a launch, not the device's time";
  }
}

TEST(CudaTrace, SpansAreTheDevicesTimeNotTheLaunch) {
  TIDE_REQUIRE_GPU();
  EngineFixture f(EngineKind::async, 1, {}, 1);
  Engine& e = *f;
  // 256 MiB per tensor: each add reads 512 MiB and writes 256 MiB, about a
  // quarter of a millisecond on the fastest GPUs and far longer than its
  // launch (a few microseconds).
  constexpr std::int64_t kN = std::int64_t{1} << 26;
  Tensor x = zeros({kN}, {DType::f32, cuda(0)});
  Tensor y = ones({kN}, {DType::f32, cuda(0)});
  e.wait_all();
  warm_up_tracing(e, x, y);
  constexpr int kAdds = 20;
  const std::int64_t before = now_steady_ns();
  for (int i = 0; i < kAdds; ++i) add_(x, y);
  e.wait_all();
  const std::int64_t after = now_steady_ns();
  std::vector<TraceEvent> ev = e.take_trace();
  ASSERT_EQ(ev.size(), static_cast<std::size_t>(kAdds));
  std::int64_t busy = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    // Within the host's window around the work (the device clock is placed
    // on the host's to within a millisecond).
    EXPECT_GE(ev[i].start_ns, before - 1'000'000) << "op " << i;
    EXPECT_LE(ev[i].end_ns, after + 1'000'000) << "op " << i;
    EXPECT_GE(ev[i].end_ns - ev[i].start_ns, 50'000) << "op " << i << ": a launch, not the device's time";
    if (i > 0) {
      EXPECT_GE(ev[i].start_ns, ev[i - 1].end_ns) << "ops " << i - 1 << " and " << i << " overlap on one stream";
    }
    busy += ev[i].end_ns - ev[i].start_ns;
  }
  // The device was busy with them for most of the wall time.
  EXPECT_GT(busy, (after - before) / 2);
  EXPECT_EQ(x.to_vector<float>().back(), static_cast<float>(kAdds + 3));
}

}  // namespace
}  // namespace tide::test
