// Failures on the backend: poison, skipping, provenance, recovery, shutdown.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "test_util.h"

namespace tide::test {
namespace {

class Errors : public ::testing::TestWithParam<EngineKind> {};

void fail_op(Engine& e, std::shared_ptr<Storage> out, StorageList reads = {}) {
  push(e, "exploding_op", cpu(0), StreamKind::compute, std::move(reads), {std::move(out)},
       [](const OpContext&) { throw std::runtime_error("boom"); });
}

// An op that asks to hear of its skip (a collective that must not leave its
// peers pairing with the next one) is called with ctx.skipped and no
// storages; what it throws is ignored, and its outputs carry the input's
// failure like any skipped op's.
TEST_P(Errors, AnOpThatAsksIsToldOfItsSkip) {
  EngineFixture e(GetParam());
  auto x = buffer(*e), y = buffer(*e), z = buffer(*e);
  fail_op(*e, x);
  int told = 0, ran = 0, nreads = -1;
  OpDesc op;
  op.name = "notified";
  op.device = cpu(0);
  op.stream = static_cast<int>(StreamKind::comm);
  op.reads.add(x);
  op.writes.add(y);
  op.notify_skip = true;
  op.fn = [&](const OpContext& c) {
    if (!c.skipped) {
      ++ran;
      return;
    }
    ++told;
    nreads = c.nreads;
    throw std::runtime_error("ignored");
  };
  e->push(std::move(op));
  push(*e, "not_notified", cpu(0), StreamKind::compute, {x}, {z}, [&](const OpContext&) { ++ran; });
  try {
    e->wait_for(*y);
    FAIL() << "no error";
  } catch (const BackendError& err) {
    EXPECT_EQ(err.provenance().op, "exploding_op");
  }
  EXPECT_THROW(e->wait_for(*z), BackendError);
  EXPECT_EQ(told, 1);
  EXPECT_EQ(nreads, 0);
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(e->stats().ops_skipped, 2u);
}

TEST_P(Errors, SurfaceAtTheBarrierWithProvenance) {
  EngineFixture e(GetParam());
  auto x = buffer(*e);
  {
    auto step = e->step();
    push(*e, "ok", cpu(0), StreamKind::compute, {}, {buffer(*e)}, [](const OpContext&) {});
  }
  auto step = e->step();
  fail_op(*e, x);
  try {
    e->wait_for(*x);
    FAIL() << "no error surfaced";
  } catch (const BackendError& err) {
    const OpProvenance& p = err.provenance();
    EXPECT_EQ(p.op, "exploding_op");
    EXPECT_EQ(p.stream, "cpu:0/compute");
    EXPECT_EQ(p.step, 1u);
    EXPECT_EQ(p.seq, 2u);
    EXPECT_EQ(p.what, "boom");
    EXPECT_NE(p.call_site.find("engine_errors_test.cc"), std::string::npos) << p.call_site;
    std::string msg = err.what();
    EXPECT_NE(msg.find("exploding_op"), std::string::npos) << msg;
    EXPECT_NE(msg.find("boom"), std::string::npos) << msg;
  }
}

TEST_P(Errors, ReadersOfPoisonAreSkippedAndPoisonTheirOutputs) {
  EngineFixture e(GetParam());
  auto x = buffer(*e), y = buffer(*e, cpu(0)), z = buffer(*e);
  fail_op(*e, x);
  bool ran = false;
  push(*e, "consumer", cpu(0), StreamKind::copy, {x}, {y}, [&](const OpContext&) { ran = true; });
  push(*e, "consumer2", cpu(0), StreamKind::compute, {y}, {z}, [&](const OpContext&) { ran = true; });
  EXPECT_THROW(e->wait_for(*z), BackendError);
  EXPECT_FALSE(ran);
  Stats s = e->stats();
  EXPECT_EQ(s.ops_failed, 1u);
  EXPECT_EQ(s.ops_skipped, 2u);
  try {
    e->wait_for(*y);
  } catch (const BackendError& err) {
    EXPECT_EQ(err.provenance().op, "exploding_op") << "the original failure is what is reported";
  }
}

TEST_P(Errors, WaitAllRethrowsTheFirstUnreportedErrorOnce) {
  EngineFixture e(GetParam());
  auto a = buffer(*e), b = buffer(*e);
  fail_op(*e, a);
  push(*e, "second_failure", cpu(0), StreamKind::copy, {}, {b},
       [](const OpContext&) { throw std::logic_error("second"); });
  try {
    e->wait_all();
    FAIL() << "wait_all did not rethrow";
  } catch (const BackendError& err) {
    EXPECT_EQ(err.provenance().op, "exploding_op");
  }
  EXPECT_NO_THROW(e->wait_all());
}

TEST_P(Errors, AnErrorReportedByWaitToReadIsNotReportedAgainByWaitAll) {
  EngineFixture e(GetParam());
  auto a = buffer(*e);
  fail_op(*e, a);
  EXPECT_THROW(e->wait_for(*a), BackendError);
  EXPECT_NO_THROW(e->wait_all());
  EXPECT_THROW(e->wait_for(*a), BackendError) << "the tensor itself stays poisoned";
}

TEST_P(Errors, EngineStaysUsableAndAWriteClearsPoison) {
  EngineFixture e(GetParam());
  auto a = buffer(*e);
  fail_op(*e, a);
  EXPECT_THROW(e->wait_all(), BackendError);
  push(*e, "rewrite", cpu(0), StreamKind::compute, {}, {a}, [](const OpContext& c) { *c.out<std::int64_t>(0) = 3; });
  EXPECT_NO_THROW(e->wait_for(*a));
  EXPECT_EQ(*values(a), 3);
}

TEST_P(Errors, NonStandardExceptionsAreCaughtToo) {
  EngineFixture e(GetParam());
  auto a = buffer(*e);
  push(*e, "throws_int", cpu(0), StreamKind::compute, {}, {a}, [](const OpContext&) { throw 42; });
  try {
    e->wait_for(*a);
    FAIL();
  } catch (const BackendError& err) {
    EXPECT_EQ(err.provenance().what, "unknown exception");
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, Errors, ::testing::Values(EngineKind::async, EngineKind::naive),
                         [](const auto& info) { return std::string(engine_kind_name(info.param)); });

TEST(Shutdown, DestroyingTheEngineFinishesQueuedWork) {
  std::atomic<int> ran{0};
  {
    EngineFixture e(EngineKind::async, 2);
    for (int i = 0; i < 3000; ++i)
      push(*e, "count", cpu(i % 2), static_cast<StreamKind>(i % 3), {}, {},
           [&](const OpContext&) { ran.fetch_add(1); });
  }
  EXPECT_EQ(ran.load(), 3000);
}

// Destroying an engine whose failure nobody saw does not hang, says so, and
// makes the process exit 1 at its end (here a child process: the death test).
TEST(ShutdownDeathTest, AnUnreportedErrorMakesTheProcessExitNonZero) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the engine has threads
  EXPECT_EXIT(
      {
        EngineFixture e;
        auto a = buffer(*e);
        fail_op(*e, a);
        e.scope.reset();
        e.engine.reset();
        std::fprintf(stderr, "engine destroyed\n");
        std::exit(0);
      },
      testing::ExitedWithCode(1),
      "unreported backend error.*boom.*\n.*will exit with status 1\n.*engine destroyed");
}

TEST(Shutdown, CancelPendingSkipsQueuedOpsAndKeepsTheEngineUsable) {
  EngineFixture e;
  std::latch started(1), release(1);
  std::atomic<int> ran{0};
  auto out = buffer(*e);
  push(*e, "held", cpu(0), StreamKind::compute, {}, {}, [&](const OpContext&) {
    started.count_down();
    release.wait();
  });
  for (int i = 0; i < 100; ++i)
    push(*e, "queued", cpu(0), StreamKind::compute, {}, {out}, [&](const OpContext&) { ran.fetch_add(1); });
  started.wait();
  std::thread releaser([&] {
    while (!e->cancelling()) std::this_thread::yield();
    release.count_down();
  });
  e->cancel_pending();
  releaser.join();
  EXPECT_EQ(ran.load(), 0);
  EXPECT_EQ(e->stats().ops_skipped, 100u);
  EXPECT_THROW(e->wait_for(*out), BackendError) << "cancelled outputs are poisoned";
  push(*e, "after", cpu(0), StreamKind::compute, {}, {out}, [&](const OpContext&) { ran.fetch_add(1); });
  EXPECT_NO_THROW(e->wait_for(*out));
  EXPECT_EQ(ran.load(), 1);
}

}  // namespace
}  // namespace tide::test
