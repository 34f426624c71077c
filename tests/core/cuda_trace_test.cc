// The timeline on a GPU: while tracing, an op on a GPU stream spans its work
// on the device (timing events around it), not its launch. The spans of one
// device share one clock, so they prove the engine's ordering across GPU
// streams as the CPU timeline does (trace_file_test.cc). Skips without a GPU.
#include <chrono>
#include <map>
#include <random>
#include <vector>

#include <tide/ops/creation.h>
#include <tide/ops/elementwise.h>

#include "../gpu_test_util.h"
#include "test_util.h"

namespace tide::test {
namespace {

std::int64_t now_steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TEST(CudaTrace, EveryOpStartsOnTheDeviceAfterTheEndOfEveryOpItDependsOn) {
  TIDE_REQUIRE_GPU();
  constexpr int kTensors = 5, kOps = 200;
  constexpr std::int64_t kN = std::int64_t{1} << 22;  // 16 MiB: tens of microseconds per add
  const StreamKind kinds[] = {StreamKind::compute, StreamKind::copy, StreamKind::comm};
  for (std::uint32_t seed = 1; seed <= 4; ++seed) {
    EngineFixture f(EngineKind::async, 1, {}, 1);
    Engine& e = *f;
    std::vector<Tensor> t;
    for (int i = 0; i < kTensors; ++i) t.push_back(zeros({kN}, {DType::f32, cuda(0)}));
    e.wait_all();
    e.set_tracing(true);
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint32_t>(n)); };
    std::vector<std::int64_t> last_write(kTensors, -1);
    std::vector<std::vector<std::int64_t>> readers(kTensors);
    std::map<std::uint64_t, std::vector<std::int64_t>> deps;
    for (int k = 0; k < kOps; ++k) {
      const int w = pick(kTensors);
      const int r = (w + 1 + pick(kTensors - 1)) % kTensors;
      const std::uint64_t me = e.pushed();
      auto& d = deps[me];
      // add_(t[w], t[r]) reads both and writes t[w].
      if (last_write[r] >= 0) d.push_back(last_write[r]);  // RAW
      if (last_write[w] >= 0) d.push_back(last_write[w]);  // RAW and WAW
      for (std::int64_t rd : readers[w]) d.push_back(rd);  // WAR
      {
        StreamScope s(kinds[pick(3)], e);
        add_(t[static_cast<std::size_t>(w)], t[static_cast<std::size_t>(r)]);
      }
      ASSERT_EQ(e.pushed(), me + 1) << "add_ pushes one op";
      readers[static_cast<std::size_t>(r)].push_back(static_cast<std::int64_t>(me));
      last_write[static_cast<std::size_t>(w)] = static_cast<std::int64_t>(me);
      readers[static_cast<std::size_t>(w)].clear();
    }
    e.wait_all();
    std::map<std::uint64_t, TraceEvent> by_push;
    for (auto& ev : e.take_trace()) by_push[ev.push_index] = ev;
    ASSERT_EQ(by_push.size(), static_cast<std::size_t>(kOps)) << "seed " << seed;
    int checked = 0;
    for (const auto& [me, must_follow] : deps) {
      const TraceEvent& op = by_push.at(me);
      EXPECT_GE(op.end_ns, op.start_ns);
      for (std::int64_t p : must_follow) {
        const TraceEvent& before = by_push.at(static_cast<std::uint64_t>(p));
        EXPECT_GE(op.start_ns, before.end_ns) << "seed " << seed << ": op #" << me << " on "
                                              << e.stream_name(op.stream) << " started on the device before op #"
                                              << p << " on " << e.stream_name(before.stream) << " ended";
        ++checked;
      }
    }
    EXPECT_GT(checked, kOps) << "the programs must have dependencies to check";
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
  e.set_tracing(true);
  // A first traced op places the device's clock and makes the timing
  // events: not part of the window measured below.
  add_(x, y);
  e.wait_all();
  e.take_trace();
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
  EXPECT_EQ(x.to_vector<float>().back(), static_cast<float>(kAdds + 1));
}

}  // namespace
}  // namespace tide::test
