// SyncPolicy::inline_op_bytes: a small memory-bound op on an idle CPU
// stream, with nothing to wait for, runs at once on the frontend thread;
// every other op goes to the stream's worker, in push order.
#include <atomic>
#include <cstdlib>
#include <string>
#include <latch>
#include <stdexcept>
#include <thread>
#include <vector>

#include "test_util.h"

namespace tide::test {
namespace {

/// Pushes `fn` on cpu(0)'s `stream`, writing `out` (reading `in` if given),
/// marked memory-bound or not; `ran_on` gets the thread that ran it.
void push_op(Engine& e, bool memory_bound, const std::shared_ptr<Storage>& out, std::thread::id* ran_on,
             std::function<void()> fn = {}, const std::shared_ptr<Storage>& in = nullptr,
             StreamKind stream = StreamKind::compute) {
  OpDesc op;
  op.name = "probe";
  op.device = cpu(0);
  op.stream = static_cast<int>(stream);
  op.memory_bound = memory_bound;
  if (in) op.reads.add(in);
  op.writes.add(out);
  op.fn = [ran_on, fn = std::move(fn)](const OpContext& ctx) {
    *ran_on = std::this_thread::get_id();
    if (fn) fn();
    *ctx.out<std::int64_t>(0) = 7;
  };
  e.push(std::move(op));
}

TEST(InlineOps, ASmallMemoryBoundOpOnAnIdleStreamRunsOnTheFrontend) {
  EngineFixture e(EngineKind::async);
  auto b = buffer(*e);
  e->wait_all();
  const std::uint64_t before = e->stats().ops_completed;
  std::thread::id ran_on;
  push_op(*e, true, b, &ran_on);
  // Done when push returns: no wait, and counted as completed.
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(values(b)[0], 7);
  EXPECT_EQ(e->stats().ops_completed, before + 1);
  e->wait_all();
}

TEST(InlineOps, OtherOpsGoToTheWorker) {
  struct Case {
    const char* what;
    bool memory_bound;
    std::uint64_t inline_op_bytes;
    std::size_t values;
  };
  for (const Case& c : {Case{"not memory-bound", false, 1 << 20, 1}, Case{"inline_op_bytes 0", true, 0, 1},
                        Case{"more bytes than inline_op_bytes", true, 64, 16}}) {
    SCOPED_TRACE(c.what);
    SyncPolicy p;
    p.inline_op_bytes = c.inline_op_bytes;
    EngineFixture e(EngineKind::async, 1, p);
    auto b = buffer(*e, cpu(0), c.values);
    e->wait_all();
    std::thread::id ran_on;
    push_op(*e, c.memory_bound, b, &ran_on);
    e->wait_all();
    EXPECT_NE(ran_on, std::this_thread::get_id());
    EXPECT_EQ(values(b)[0], 7);
  }
}

TEST(InlineOps, BehindQueuedWorkAnOpWaitsItsTurnOnTheWorker) {
  EngineFixture e(EngineKind::async);
  auto held_out = buffer(*e), b = buffer(*e);
  e->wait_all();
  std::latch hold(1);
  std::atomic<int> order{0};
  int held_at = -1, probe_at = -1;
  std::thread::id held_on, probe_on;
  push_op(*e, false, held_out, &held_on, [&] {
    hold.wait();
    held_at = order++;
  });
  push_op(*e, true, b, &probe_on, [&] { probe_at = order++; });
  EXPECT_EQ(probe_at, -1);  // not run on the frontend: the stream was busy
  hold.count_down();
  e->wait_all();
  EXPECT_EQ(held_at, 0);
  EXPECT_EQ(probe_at, 1);
  EXPECT_NE(probe_on, std::this_thread::get_id());
}

TEST(InlineOps, AnUnfinishedProducerOnAnotherStreamKeepsTheOpQueued) {
  EngineFixture e(EngineKind::async);
  auto a = buffer(*e), b = buffer(*e);
  e->wait_all();
  std::latch hold(1);
  std::thread::id producer_on, consumer_on;
  // The producer, on cpu(0)'s copy stream, writes a only once let go.
  push_op(*e, false, a, &producer_on, [&] { hold.wait(); }, nullptr, StreamKind::copy);
  std::int64_t seen = -1;
  OpDesc op;
  op.name = "consumer";
  op.device = cpu(0);
  op.memory_bound = true;
  op.reads.add(a);
  op.writes.add(b);
  op.fn = [&](const OpContext& ctx) {
    consumer_on = std::this_thread::get_id();
    seen = *ctx.in<std::int64_t>(0);
    *ctx.out<std::int64_t>(0) = seen + 1;
  };
  e->push(std::move(op));
  EXPECT_EQ(seen, -1);
  hold.count_down();
  e->wait_all();
  EXPECT_EQ(seen, 7);
  EXPECT_EQ(values(b)[0], 8);
  EXPECT_NE(consumer_on, std::this_thread::get_id());
}

TEST(InlineOps, AFailureOnTheFrontendIsReportedAsTheWorkersWouldBe) {
  EngineFixture e(EngineKind::async);
  auto a = buffer(*e), b = buffer(*e);
  e->wait_all();
  std::thread::id failed_on, next_on{};
  push_op(*e, true, a, &failed_on, [] { throw std::runtime_error("bad kernel"); });
  EXPECT_EQ(failed_on, std::this_thread::get_id());
  // The push returned normally; the failure is kept for the next barrier,
  // and an op reading the poisoned output is skipped.
  bool ran = false;
  push_op(*e, true, b, &next_on, [&] { ran = true; }, a);
  EXPECT_FALSE(ran);
  try {
    e->wait_all();
    ADD_FAILURE() << "wait_all did not report the failure";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("bad kernel"), std::string::npos) << err.what();
  }
  EXPECT_NE(b->poison(), nullptr);
}

TEST(InlineOps, AKernelRunOnTheFrontendMayNotUseTheEngine) {
  // As on a worker: the kernel's push is refused, the op fails with why,
  // and the engine goes on.
  EngineFixture e(EngineKind::async);
  auto a = buffer(*e), b = buffer(*e);
  e->wait_all();
  const std::uint64_t pushed_before = e->stats().ops_pushed;
  std::thread::id ran_on;
  Engine& engine = *e;
  push_op(engine, true, a, &ran_on, [&] {
    std::thread::id unused;
    push_op(engine, true, b, &unused);
  });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(e->stats().ops_pushed, pushed_before + 1);  // the kernel's push never happened
  try {
    e->wait_all();
    ADD_FAILURE() << "wait_all did not report the refused push";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("a kernel used the tide engine"), std::string::npos) << err.what();
  }
  push_op(engine, true, b, &ran_on);
  e->wait_all();
  EXPECT_EQ(values(b)[0], 7);
}

TEST(InlineOps, TheDefaultSizeIsTwiceACoresL2OrTheVariables) {
  // core.inline_op_kb runs this with TIDE_INLINE_OP_KB=3, core.inline_op_kb_bad with "lots".
  const char* v = std::getenv("TIDE_INLINE_OP_KB");
  const std::string set = v ? v : "";
  if (set.empty()) {
    EXPECT_EQ(SyncPolicy{}.inline_op_bytes, SyncPolicy::default_max_streaming_host_bytes());
  } else if (set == "3") {
    EXPECT_EQ(SyncPolicy{}.inline_op_bytes, 3u << 10);
  } else {
    try {
      (void)SyncPolicy{};
      ADD_FAILURE() << "TIDE_INLINE_OP_KB=" << set << " was taken";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("TIDE_INLINE_OP_KB=" + set), std::string::npos) << e.what();
    }
  }
}

TEST(InlineOps, ALoopOfTinyOpsMatchesTheNaiveEngine) {
  // y = y + 1 a thousand times, memory-bound: the same value on both engines.
  std::int64_t result[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    EngineFixture e(k == 0 ? EngineKind::async : EngineKind::naive);
    auto y = buffer(*e);
    values(y)[0] = 0;
    for (int i = 0; i < 1000; ++i) {
      OpDesc op;
      op.name = "inc";
      op.device = cpu(0);
      op.memory_bound = true;
      op.writes.add(y);
      op.fn = [](const OpContext& ctx) { ++*ctx.out<std::int64_t>(0); };
      e->push(std::move(op));
    }
    e->wait_all();
    result[k] = values(y)[0];
  }
  EXPECT_EQ(result[0], 1000);
  EXPECT_EQ(result[1], 1000);
}

}  // namespace
}  // namespace tide::test
