// The end of a timed GPU op's span is recorded once: by the kernel right
// after it enqueues its work (OpContext::launched, for kernels that then
// wait on the host), else by the worker after the kernel returns. A fake
// lane stands for the device.
#include <gtest/gtest.h>

#include <vector>

#include "stream.h"

namespace tide {
namespace {

struct FakeLane final : backend::Lane {
  std::vector<std::uint64_t> ends;
  bool fail = false;
  int device() const override { return 0; }
  void bind_thread() const override {}
  void* native() const override { return nullptr; }
  backend::Fault record(std::uint64_t) override { return {}; }
  backend::Fault make_wait(std::uint64_t, void*, const std::atomic<std::uint64_t>&) override { return {}; }
  backend::Fault wait_done(std::uint64_t, const std::atomic<std::uint64_t>&, std::uint64_t) override { return {}; }
  backend::Fault record_begin(std::uint64_t) override { return {}; }
  backend::Fault record_end(std::uint64_t seq) override {
    ends.push_back(seq);
    if (fail) return {"no timing", false};
    return {};
  }
  bool span(std::uint64_t, std::int64_t&, std::int64_t&) override { return false; }
};

TEST(GpuTiming, TheKernelsLaunchMarkEndsTheSpanAndTheWorkersIsThenSkipped) {
  FakeLane lane;
  QueuedOp op;
  op.seq = 42;
  op.timing_lane = &lane;
  OpContext ctx;
  ctx.on_launched = &QueuedOp::record_end_now;
  ctx.launched_arg = &op;
  ctx.launched();                  // the kernel, after enqueuing
  QueuedOp::record_end_now(&op);   // the worker, after the kernel
  EXPECT_EQ(lane.ends, std::vector<std::uint64_t>{42});
  EXPECT_EQ(op.end_recorded, 1);
}

TEST(GpuTiming, AFailedEndLeavesTheOpUntimedAndAnUntimedOpRecordsNothing) {
  FakeLane lane;
  lane.fail = true;
  QueuedOp op;
  op.seq = 7;
  op.timing_lane = &lane;
  QueuedOp::record_end_now(&op);
  EXPECT_EQ(lane.ends, std::vector<std::uint64_t>{7});
  EXPECT_EQ(op.end_recorded, -1) << "a failed record leaves the op untimed";
  op.clear();
  EXPECT_EQ(op.timing_lane, nullptr);
  QueuedOp::record_end_now(&op);  // untimed: nothing recorded
  EXPECT_EQ(lane.ends.size(), 1u);
  OpContext host;
  host.launched();  // a host op: no mark, nothing happens
}

}  // namespace
}  // namespace tide
