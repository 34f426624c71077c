// A GPU stream's completion events follow runs of ops (Stream::cover), run
// here on a simulated device: each lane is a thread that runs enqueued work
// in order, with CUDA's event semantics (a record captures the work queued
// so far; a wait captures the latest record; a re-record starts afresh).
// The Stream code is the one a GPU runs; only the lane is simulated. Checked:
// completion never runs ahead of the device across more ops than the event
// ring holds, cross-stream order and ping-pong, a waiter for an op in the
// middle of a burst whose later work is held on the device, an op blocked
// on the host behind launched ops, ops the frontend launches itself on an
// idle stream among queued ones, whether the host waits for the ops an
// event covers, how long a host's wait polls before it sleeps, the worker
// kept awake while the host polls, a wait for a launch woken only once
// its op is covered, two waiters each served at their op's launch, runs
// cut by the bytes their ops allocate, runs shortened for 128 events after
// a late wait (a host's or another stream's; a wait for a run's last op is
// not late), the threads' names, and shutdown with work queued.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "stream.h"

namespace tide {
namespace {

/// A device queue: one thread running work items in order.
class SimQueue {
 public:
  SimQueue() : thread_([this] { run(); }) {}
  ~SimQueue() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void push(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> lock(m_);
      q_.push_back(std::move(f));
    }
    cv_.notify_all();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> f;
      {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [&] { return stop_ || !q_.empty(); });
        if (q_.empty()) return;
        f = std::move(q_.front());
        q_.pop_front();
      }
      f();
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> q_;
  bool stop_ = false;
  std::thread thread_;
};

/// One recording of an event: set when the device reaches it.
struct Mark {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  void set() {
    {
      std::lock_guard<std::mutex> lock(m);
      done = true;
    }
    cv.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return done; });
  }
  bool wait_for(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(m);
    return cv.wait_for(lock, d, [&] { return done; });
  }
};

/// A lane on a SimQueue, with a ring of events as CudaLane has.
class SimLane final : public backend::Lane {
 public:
  SimLane() : marks_(kRing), recorded_at_(kRing, 0) {}
  int device() const override { return 0; }
  void bind_thread() const override {}
  void* native() const override { return const_cast<SimQueue*>(&queue_); }
  backend::Fault record(std::uint64_t seq) override {
    auto mark = std::make_shared<Mark>();
    std::lock_guard<std::mutex> lock(mutex_);
    marks_[seq % kRing] = mark;
    recorded_at_[seq % kRing] = seq;
    last_ = seq;
    records.fetch_add(1);
    queue_.push([mark] { mark->set(); });
    return {};
  }
  backend::Fault make_wait(std::uint64_t seq, void* consumer, const std::atomic<std::uint64_t>& completed) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (completed.load() >= seq) return {};
    if (last_ < seq) return {"no event covers the awaited op", false};
    std::uint64_t at = last_;
    for (std::uint64_t s = seq; s < last_; ++s)
      if (recorded_at_[s % kRing] == s) {
        at = s;
        break;
      }
    std::shared_ptr<Mark> mark = marks_[at % kRing];
    static_cast<SimQueue*>(consumer)->push([mark] { mark->wait(); });
    return {};
  }
  backend::Fault wait_done(std::uint64_t seq, const std::atomic<std::uint64_t>& host_wants,
                           std::uint64_t first) override {
    std::shared_ptr<Mark> mark;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      mark = marks_[seq % kRing];
      if (recorded_at_[seq % kRing] != seq) return {"waited for an op no event was recorded after", true};
    }
    // Notes whether a host thread waited for one of these ops while the
    // device held them (where CudaLane polls on instead of sleeping).
    while (!mark->wait_for(std::chrono::milliseconds(1))) {
      const std::uint64_t w = host_wants.load();
      if (w >= first && w <= seq) host_waited.store(true);
    }
    return {};
  }
  std::chrono::microseconds host_poll() const override { return std::chrono::microseconds(host_poll_us.load()); }
  /// Whether the latest event in op `seq`'s slot was recorded right after it
  /// (`seq` ended a run).
  bool recorded_after(std::uint64_t seq) {
    std::lock_guard<std::mutex> lock(mutex_);
    return recorded_at_[seq % kRing] == seq;
  }
  backend::Fault record_begin(std::uint64_t) override { return {"untimed", false}; }
  backend::Fault record_end(std::uint64_t) override { return {"untimed", false}; }
  bool span(std::uint64_t, std::int64_t&, std::int64_t&) override { return false; }

  std::atomic<std::uint64_t> records{0};
  std::atomic<bool> host_waited{false};
  std::atomic<std::int64_t> host_poll_us{50};

 private:
  SimQueue queue_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<Mark>> marks_;
  std::vector<std::uint64_t> recorded_at_;
  std::uint64_t last_ = 0;
};

/// What the engine does around an op, reduced to running its kernel.
struct Hooks final : Stream::Hooks {
  std::atomic<int> failures{0};
  void run(QueuedOp& op, int, void* native, const char* skip) override {
    if (skip) {
      failures.fetch_add(1);
      return;
    }
    OpContext ctx;
    ctx.native_stream = native;
    op.desc.fn(ctx);
  }
  void completed(std::uint64_t, std::uint64_t) override {}
  void async_failure(QueuedOp&, int, const std::string&, bool) override { failures.fetch_add(1); }
  bool tracing() const override { return false; }
  void trace_settled(QueuedOp&, int, bool, std::int64_t, std::int64_t) override {}
};

/// A stream on a fresh simulated device, and its lane.
struct SimStream {
  SimLane* lane;
  std::unique_ptr<Stream> stream;
  SimStream(Hooks& hooks, int index) {
    auto l = std::make_unique<SimLane>();
    lane = l.get();
    stream = std::make_unique<Stream>(hooks, index, std::move(l));
  }
  ~SimStream() {
    if (joined) return;
    stream->stop();
    stream->join();
  }
  bool joined = false;
};

/// Holds `s`'s worker on the host while 256 tiny ops queue behind it, lets
/// it go and waits until every op is launched; returns the events recorded
/// meanwhile (at least 2 with runs of 128 ops, at least 8 with runs of 32).
std::uint64_t burst(SimStream& s);

/// Pushes an op whose kernel enqueues `device_work` on its stream's queue
/// (or, not launch-only, runs `host_work` on the worker); returns its seq.
std::uint64_t push(Stream& s, std::function<void()> device_work, std::vector<StreamPoint> waits = {},
                   bool launch_only = true) {
  QueuedOp* op = s.acquire_op();
  op->desc.launch_only = launch_only;
  op->desc.fn = [device_work = std::move(device_work), launch_only](const OpContext& ctx) {
    if (launch_only) static_cast<SimQueue*>(ctx.native_stream)->push(device_work);
    else device_work();  // on the host, in the worker
  };
  op->seq = s.next_seq();
  for (const StreamPoint& p : waits) op->waits[op->nwaits++] = p;
  s.enqueue(op);
  return op->seq;
}

std::uint64_t burst(SimStream& s) {
  std::latch hold(1);
  push(*s.stream, [&hold] { hold.wait(); }, {}, false);
  for (int i = 0; i < 256; ++i) push(*s.stream, [] {});
  const std::uint64_t before = s.lane->records.load();
  hold.count_down();
  while (s.stream->launched() < s.stream->pushed()) std::this_thread::yield();
  return s.lane->records.load() - before;
}

TEST(StreamCover, CompletionNeverRunsAheadOfTheDeviceAcrossTheRing) {
  Hooks hooks;
  SimStream a(hooks, 0);
  std::atomic<std::uint64_t> device_count{0};
  constexpr std::uint64_t kOps = 5000;  // several laps of the 1024-event ring
  // The worker is held on the host while the ops are queued, so that it
  // finds a long queue (runs of ops) whatever the machine's load.
  std::latch hold(1);
  push(*a.stream, [&hold] { hold.wait(); }, {}, false);
  for (std::uint64_t i = 2; i <= kOps; ++i)
    ASSERT_EQ(push(*a.stream, [&device_count] { device_count.fetch_add(1); }), i);
  hold.count_down();
  for (std::uint64_t i = 777; i <= kOps; i += 777) {  // waiters in the middle of runs
    a.stream->wait_until(i);
    EXPECT_GE(device_count.load(), i - 1) << "op " << i << " counted complete before the device ran it";
    a.stream->reclaim();
  }
  a.stream->wait_until(kOps);
  EXPECT_EQ(device_count.load(), kOps - 1);
  EXPECT_EQ(hooks.failures.load(), 0);
  // Events follow runs: far fewer than one per op.
  EXPECT_LT(a.lane->records.load(), kOps / 4) << "an event per op";
  EXPECT_GE(a.lane->records.load(), kOps / 128) << "a run of more than 128 ops";
}

TEST(StreamCover, CrossStreamReadsSeeEveryWriteAndPingPongNeverStalls) {
  Hooks hooks;
  SimStream a(hooks, 0), b(hooks, 1);
  std::vector<int> cells(2000, 0);
  std::atomic<int> wrong{0};
  std::uint64_t last_a = 0;
  for (int i = 0; i < 2000; ++i) {
    last_a = push(*a.stream, [&cells, i] { cells[static_cast<std::size_t>(i)] = i + 1; });
    if (i % 3 == 0)  // b reads what a wrote, ordered by an event wait only
      push(*b.stream, [&cells, &wrong, i] { wrong += cells[static_cast<std::size_t>(i)] != i + 1; },
           {{a.stream.get(), last_a}});
    a.stream->reclaim();
    b.stream->reclaim();
  }
  // Ping-pong: each op reads the other stream's latest output.
  std::atomic<int> value{0};
  std::uint64_t prev_a = 0, prev_b = 0;
  for (int i = 0; i < 400; ++i) {
    if (i % 2 == 0) {
      prev_a = push(*a.stream, [&value, &wrong, i] { wrong += value.load() != i; value = i + 1; },
                    prev_b ? std::vector<StreamPoint>{{b.stream.get(), prev_b}} : std::vector<StreamPoint>{});
    } else {
      prev_b = push(*b.stream, [&value, &wrong, i] { wrong += value.load() != i; value = i + 1; },
                    {{a.stream.get(), prev_a}});
    }
  }
  b.stream->wait_until(prev_b);
  a.stream->wait_until(a.stream->pushed());
  EXPECT_EQ(value.load(), 400);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(hooks.failures.load(), 0);
}

TEST(StreamCover, AWaiterForAnOpMidBurstIsNotHeldByTheWorkAfterIt) {
  Hooks hooks;
  SimStream a(hooks, 0);
  std::latch start(1), release(1);
  // The worker is held on the host first, so that the waiter below asks for
  // op x before the worker launches it.
  push(*a.stream, [&start] { start.wait(); }, {}, false);
  const std::uint64_t x = push(*a.stream, [] {});
  // The work after x is held on the device until the waiter is through:
  // were x's event recorded only after it, the wait could never end.
  push(*a.stream, [&release] { release.wait(); });
  for (int i = 0; i < 10; ++i) push(*a.stream, [] {});
  std::thread opener([&start] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    start.count_down();
  });
  a.stream->wait_until(x);
  EXPECT_GE(a.stream->completed(), x);
  release.count_down();
  opener.join();
  a.stream->wait_until(a.stream->pushed());
  EXPECT_EQ(hooks.failures.load(), 0);
}

TEST(StreamCover, AnOpBlockedOnTheHostGetsTheEventOfTheOpsBeforeIt) {
  Hooks hooks;
  SimStream a(hooks, 0);
  std::latch entered(1), hold(1);
  std::atomic<bool> wrote{false};
  const std::uint64_t w = push(*a.stream, [&wrote] { wrote = true; });
  push(*a.stream, [&entered, &hold] {  // a collective waiting for its peers, say
    entered.count_down();
    hold.wait();
  }, {}, false);
  // Asked only once the worker is inside the held op: w must have had its
  // event before it, or the wait would never end.
  entered.wait();
  a.stream->wait_until(w);
  EXPECT_TRUE(wrote.load());
  hold.count_down();
  a.stream->wait_until(a.stream->pushed());
}

TEST(StreamCover, TwoWaitersAreEachServedWhenTheirOpIsLaunched) {
  // A waiter for op x and one for a later op y on the same stream: x must
  // be covered when it is launched, not only with y (the device is held
  // between them, so an event after y would never be reached while the
  // first waiter waits) nor at the end of a run.
  Hooks hooks;
  SimStream a(hooks, 0);
  a.lane->host_poll_us = 60'000'000;  // both waiters poll (host_pollers) until served
  std::latch start(1), release(1);
  push(*a.stream, [&start] { start.wait(); }, {}, false);  // the worker is held first
  const std::uint64_t x = push(*a.stream, [] {});
  push(*a.stream, [&release] { release.wait(); });  // the device stops here
  std::uint64_t y = 0;
  for (int i = 0; i < 20; ++i) y = push(*a.stream, [] {});
  std::thread later([&] { a.stream->wait_until(y); });  // the latest op asked for
  while (a.stream->host_pollers() < 1) std::this_thread::yield();
  std::atomic<bool> served{false};
  std::thread earlier([&] {
    a.stream->wait_until(x);
    served = true;
  });
  while (a.stream->host_pollers() < 2) std::this_thread::yield();  // both have asked
  start.count_down();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!served.load() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(served.load()) << "the earlier waiter was held until the later op's event";
  release.count_down();  // either way, let everything finish
  earlier.join();
  later.join();
  EXPECT_GE(a.stream->completed(), y);
  EXPECT_EQ(hooks.failures.load(), 0);
}

TEST(StreamCover, ARunOfLargeOpsIsCoveredByItsBytes) {
  // Ops that allocate 40 MiB each: a run ends once its ops have allocated
  // 64 MiB (every second op), so their memory returns with the op after
  // them rather than with the 128th; tiny ops make runs of up to 128.
  Hooks hooks;
  SimStream a(hooks, 0), b(hooks, 1);
  constexpr int kOps = 256;
  auto burst = [](SimStream& s, std::uint64_t bytes) {
    std::latch hold(1);
    push(*s.stream, [&hold] { hold.wait(); }, {}, false);  // a long queue whatever the load
    for (int i = 0; i < kOps; ++i) {
      QueuedOp* op = s.stream->acquire_op();
      op->desc.launch_only = true;
      op->desc.fn = [](const OpContext& ctx) { static_cast<SimQueue*>(ctx.native_stream)->push([] {}); };
      op->bytes = bytes;
      op->seq = s.stream->next_seq();
      s.stream->enqueue(op);
    }
    hold.count_down();
    s.stream->wait_until(s.stream->pushed());
  };
  burst(a, std::uint64_t{40} << 20);
  burst(b, 8);
  EXPECT_GE(a.lane->records.load(), static_cast<std::uint64_t>(kOps / 2)) << "runs of large ops past 64 MiB";
  EXPECT_LE(b.lane->records.load(), static_cast<std::uint64_t>(kOps / 32)) << "runs of tiny ops cut short";
  EXPECT_GE(b.lane->records.load(), static_cast<std::uint64_t>(kOps / 128));
  EXPECT_EQ(hooks.failures.load(), 0);
}

TEST(StreamCover, ALateWaitMakesTheNextRunsShort) {
  // Runs of tiny ops are up to 128 long. A wait for an op covered in the
  // middle of a run, not done yet, lands on the run's event after its later
  // ops: once one is seen, the worker cuts its runs at 32 ops for a while.
  Hooks hooks;
  SimStream a(hooks, 0);
  a.lane->host_poll_us = 60'000'000;  // the late waiter polls (host_pollers) until served
  std::latch device(1);
  push(*a.stream, [&device] { device.wait(); });  // nothing after this is done until the end
  const std::uint64_t long_runs = burst(a);
  EXPECT_LE(long_runs, 4u) << "runs of tiny ops shorter than 128 before any late wait";
  const std::uint64_t mid = a.stream->launched() - 100;  // covered, not its run's last, not done
  std::thread late([&a, mid] { a.stream->wait_until(mid); });
  while (a.stream->host_pollers() < 1) std::this_thread::yield();
  const std::uint64_t short_runs = burst(a);
  EXPECT_GE(short_runs, 8u) << "runs of more than 32 ops after a late wait";
  device.count_down();
  late.join();
  a.stream->wait_until(a.stream->pushed());
  EXPECT_EQ(hooks.failures.load(), 0);
}

TEST(StreamCover, AConsumerStreamsLateWaitMakesTheProducersRunsShort) {
  // The same late wait from another GPU stream: b's op waits (on the
  // device) for an op of a covered in the middle of a run and not done.
  Hooks hooks;
  SimStream a(hooks, 0), b(hooks, 1);
  std::latch device(1);
  push(*a.stream, [&device] { device.wait(); });
  EXPECT_LE(burst(a), 4u) << "runs of tiny ops shorter than 128 before any late wait";
  const std::uint64_t mid = a.stream->launched() - 100;
  std::atomic<bool> ran{false};
  const std::uint64_t consumer = push(*b.stream, [&ran] { ran = true; }, {{a.stream.get(), mid}});
  // Once b's worker has launched its op, it has made its wait on a.
  while (b.stream->launched() < consumer) std::this_thread::yield();
  EXPECT_GE(burst(a), 8u) << "runs of more than 32 ops after a consumer stream's late wait";
  EXPECT_FALSE(ran.load()) << "b's op ran before the op of a it waits for";
  device.count_down();
  b.stream->wait_until(consumer);
  EXPECT_TRUE(ran.load());
  a.stream->wait_until(a.stream->pushed());
  EXPECT_EQ(hooks.failures.load(), 0);
}

TEST(StreamCover, AWaitForARunsLastOpIsNotLate) {
  // The event after a run's last op is that op's own: waiting for it waits
  // for nothing later, so the runs stay long.
  Hooks hooks;
  SimStream a(hooks, 0);
  a.lane->host_poll_us = 60'000'000;  // the waiter polls (host_pollers) until served
  std::latch device(1);
  push(*a.stream, [&device] { device.wait(); });
  EXPECT_LE(burst(a), 4u);
  std::uint64_t end = a.stream->launched() - 100;
  while (!a.lane->recorded_after(end)) --end;  // the last op of an earlier run
  ASSERT_LT(a.stream->completed(), end);
  std::thread waiter([&a, end] { a.stream->wait_until(end); });
  while (a.stream->host_pollers() < 1) std::this_thread::yield();
  EXPECT_LE(burst(a), 4u) << "a wait for a run's last op made the runs short";
  device.count_down();
  waiter.join();
  a.stream->wait_until(a.stream->pushed());
  EXPECT_EQ(hooks.failures.load(), 0);
}

TEST(StreamCover, RunsGrowLongAgainAfterTheShortOnes) {
  // A late wait shortens the next 128 runs only: then, with no late wait
  // since, runs of tiny ops are 128 long again.
  Hooks hooks;
  SimStream a(hooks, 0);
  a.lane->host_poll_us = 60'000'000;
  std::latch device(1);
  push(*a.stream, [&device] { device.wait(); });
  burst(a);
  const std::uint64_t mid = a.stream->launched() - 100;
  std::thread late([&a, mid] { a.stream->wait_until(mid); });
  while (a.stream->host_pollers() < 1) std::this_thread::yield();
  device.count_down();  // from here every op completes, and nobody waits late
  late.join();
  std::uint64_t short_events = 0, events = burst(a);
  EXPECT_GE(events, 8u) << "runs of more than 32 ops after a late wait";
  int bursts = 1;
  // 128 short events take 16 bursts of 8; 24 leave room for runs cut early.
  while (events > 4 && bursts < 24) {
    short_events += events;
    events = burst(a);
    ++bursts;
  }
  EXPECT_LE(events, 4u) << "runs still short after " << bursts << " bursts (" << short_events << " events)";
  EXPECT_GE(short_events, 120u) << "runs grew long again before 128 short events";
  a.stream->wait_until(a.stream->pushed());
  EXPECT_EQ(hooks.failures.load(), 0);
}

TEST(StreamCover, AWaitForALaunchWakesOnlyWhenItsOpIsCovered) {
  // The frontend at the cap on unlaunched ops waits for hundreds of ops to
  // be launched, which the worker covers up to 128 at a time: it must be
  // woken once, when its op is covered, not at every cover before it.
  Hooks hooks;
  SimStream a(hooks, 0);
  std::latch hold(1);
  push(*a.stream, [&hold] { hold.wait(); }, {}, false);  // the ops behind it are all queued
  constexpr int kSlow = 640;                              // five covers of 128
  std::uint64_t last = 0;
  for (int i = 0; i < kSlow; ++i) {
    QueuedOp* op = a.stream->acquire_op();
    op->desc.launch_only = true;
    op->desc.fn = [](const OpContext& ctx) {  // a launch that takes the host 100 us
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      static_cast<SimQueue*>(ctx.native_stream)->push([] {});
    };
    op->seq = last = a.stream->next_seq();
    a.stream->enqueue(op);
  }
  hold.count_down();
  a.stream->wait_launched(last);
  EXPECT_GE(a.stream->launched(), last);
  // A notify only for this waiter's op (and, rarely, a spurious wake-up).
  EXPECT_LE(a.stream->launch_wakeups(), 2u) << "woken at covers before its op's";
  a.stream->wait_until(last);
  EXPECT_EQ(hooks.failures.load(), 0);
}

/// As push(), but the op is launched on this thread when the stream has
/// completed everything before it (what the engine does for a small op on
/// an idle GPU stream), else queued; `inline_count` counts the first kind.
std::uint64_t push_or_launch(Stream& s, std::function<void()> device_work, int& inline_count) {
  QueuedOp* op = s.acquire_op();
  op->desc.launch_only = true;
  op->desc.fn = [device_work = std::move(device_work)](const OpContext& ctx) {
    static_cast<SimQueue*>(ctx.native_stream)->push(device_work);
  };
  op->seq = s.next_seq();
  if (s.idle_before(op->seq)) {
    s.launch_here(op);
    ++inline_count;
  } else {
    s.enqueue(op);
  }
  return op->seq;
}

TEST(StreamCover, OpsLaunchedOnTheFrontendKeepTheStreamsOrderAndEvents) {
  Hooks hooks;
  SimStream a(hooks, 0), b(hooks, 1);
  std::atomic<int> wrong{0};
  int next = 0, inline_count = 0;  // the device's count of a's ops, checked by each in turn
  std::atomic<int> device_next{0};
  auto op_of = [&](int i) {
    return [&device_next, &wrong, i] { wrong += device_next.exchange(i + 1) != i; };
  };
  for (int round = 0; round < 300; ++round) {
    // A round trip (launched here, the stream being idle), then a burst
    // (mostly queued behind it), then another stream reading the last op.
    a.stream->wait_until(a.stream->pushed());
    std::uint64_t s = push_or_launch(*a.stream, op_of(next++), inline_count);
    a.stream->wait_until(s);
    EXPECT_EQ(device_next.load(), next) << "op " << s << " counted complete before the device ran it";
    for (int k = 0; k < round % 7; ++k) s = push_or_launch(*a.stream, op_of(next++), inline_count);
    const int expect = next;
    push(*b.stream, [&device_next, &wrong, expect] { wrong += device_next.load() < expect; },
         {{a.stream.get(), s}});
    a.stream->reclaim();
    b.stream->reclaim();
  }
  a.stream->wait_until(a.stream->pushed());
  b.stream->wait_until(b.stream->pushed());
  EXPECT_EQ(device_next.load(), next);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(hooks.failures.load(), 0);
  EXPECT_GE(inline_count, 300) << "every round trip's op found the stream idle";
  EXPECT_EQ(a.stream->completed(), a.stream->pushed());
}

// The completion thread learns whether a host thread waits for one of the
// ops its event covers (CudaLane then polls on rather than sleeping through
// the end of the burst): not while the ops finish with nobody waiting, nor
// for an event the awaited op comes after (its wake-up overlaps that op's
// work), and yes while the host waits for one of them in wait_until.
TEST(StreamCover, TheCompletionWaitKnowsWhenTheHostWaitsForItsOps) {
  using namespace std::chrono_literals;
  Hooks hooks;
  SimStream a(hooks, 0);
  auto until_true = [](const std::atomic<bool>& flag) {
    for (int i = 0; i < 5000 && !flag.load(); ++i) std::this_thread::sleep_for(1ms);
  };
  {
    std::latch device(1);
    push(*a.stream, [&device] { device.wait(); });  // the device holds this run
    const std::uint64_t last = push(*a.stream, [] {});
    std::this_thread::sleep_for(20ms);
    device.count_down();
    while (!a.stream->reached(last)) std::this_thread::sleep_for(1ms);
    EXPECT_FALSE(a.lane->host_waited.load()) << "nobody waited for these ops";
  }
  {
    // Two events: the host waits for an op of the second while the device
    // holds the first.
    std::latch first_run(1), second_run(1);
    const std::uint64_t records = a.lane->records.load();
    push(*a.stream, [&first_run] { first_run.wait(); });
    push(*a.stream, [] {});
    // Its event is recorded once the worker finds the queue dry.
    for (int i = 0; i < 5000 && a.lane->records.load() == records; ++i) std::this_thread::sleep_for(1ms);
    EXPECT_GT(a.lane->records.load(), records);
    // The awaited op itself holds the second run, so that its event is
    // waited for whether the worker covers it alone or with the op before
    // it (which it does when it finds the queue dry in between).
    push(*a.stream, [] {});
    const std::uint64_t last = push(*a.stream, [&second_run] { second_run.wait(); });
    std::thread host([&] { a.stream->wait_until(last); });
    std::this_thread::sleep_for(30ms);  // the host waits while the device holds the first run
    EXPECT_FALSE(a.lane->host_waited.load()) << "the awaited op " << last << " is after this event";
    first_run.count_down();
    until_true(a.lane->host_waited);  // now the device holds the awaited op
    EXPECT_TRUE(a.lane->host_waited.load()) << "the host waited for op " << last;
    second_run.count_down();
    host.join();
  }
  EXPECT_EQ(hooks.failures.load(), 0);
}

TEST(StreamCover, AHostWaitPollsAsLongAsItsLaneSaysThenSleeps) {
  using namespace std::chrono_literals;
  Hooks hooks;
  SimStream a(hooks, 0);
  // The device takes 30 ms over the op: a wait polling up to 10 s sees it
  // done without sleeping; one told not to poll sleeps once and is woken.
  a.lane->host_poll_us.store(10'000'000);
  std::uint64_t seq = push(*a.stream, [] { std::this_thread::sleep_for(30ms); });
  a.stream->wait_until(seq);
  EXPECT_TRUE(a.stream->reached(seq));
  EXPECT_EQ(a.stream->host_sleeps(), 0u) << "the wait slept within its lane's poll";
  a.lane->host_poll_us.store(0);
  seq = push(*a.stream, [] { std::this_thread::sleep_for(30ms); });
  a.stream->wait_until(seq);
  EXPECT_TRUE(a.stream->reached(seq));
  EXPECT_EQ(a.stream->host_sleeps(), 1u) << "a wait past its lane's poll sleeps until the completion wakes it";
  EXPECT_EQ(hooks.failures.load(), 0);
}

// While a host thread polls in a wait for a GPU stream's ops, the stream's
// worker polls its queue too instead of sleeping after its own short poll,
// so the ops pushed once the wait ends need no wake-up; once the host stops
// polling (its wait ended, or it went to sleep) the worker sleeps again.
TEST(StreamCover, TheWorkerStaysAwakeWhileTheHostPollsInAWait) {
  using namespace std::chrono_literals;
  Hooks hooks;
  SimStream a(hooks, 0);
  auto until = [](auto&& cond) {
    for (int i = 0; i < 5000 && !cond(); ++i) std::this_thread::sleep_for(1ms);
    return cond();
  };
  // Nobody waits: the worker sleeps soon after the queue runs dry.
  const std::uint64_t first = push(*a.stream, [] {});
  a.stream->wait_until(first);
  EXPECT_TRUE(until([&] { return a.stream->worker_asleep(); })) << "an idle worker never slept";
  // The host polls (up to 10 s) for the next op, which the device then
  // holds for 50 ms: the worker, woken by its push, must not sleep
  // meanwhile. (The host's wait starts first: a worker that went to sleep
  // before the host waited stays asleep until the next push.)
  a.lane->host_poll_us.store(10'000'000);
  std::latch device(1);
  const std::uint64_t held = a.stream->pushed() + 1;
  const std::uint64_t sleeps = a.stream->host_sleeps();
  std::atomic<bool> waited{false};
  std::thread host([&] {
    a.stream->wait_until(held);
    waited = true;
  });
  EXPECT_TRUE(until([&] { return a.stream->host_pollers() == 1; })) << "the host's wait never polled";
  EXPECT_EQ(push(*a.stream, [&device] { device.wait(); }), held);
  std::this_thread::sleep_for(50ms);  // a thousand times the worker's own poll
  EXPECT_FALSE(a.stream->worker_asleep()) << "the worker slept while the host polled for its ops";
  device.count_down();
  host.join();
  EXPECT_TRUE(waited.load());
  EXPECT_EQ(a.stream->host_sleeps(), sleeps) << "the host's wait slept within its poll";
  EXPECT_TRUE(until([&] { return a.stream->worker_asleep(); })) << "the worker never slept after the wait";
  // A host wait that has gone to sleep does not keep it awake: once the
  // worker has launched the op (its event recorded: it ran, so it was
  // awake) and the host's wait sleeps, the worker must go to sleep again.
  a.lane->host_poll_us.store(0);
  std::latch device2(1);
  const std::uint64_t records = a.lane->records.load(), sleeps2 = a.stream->host_sleeps();
  const std::uint64_t held2 = push(*a.stream, [&device2] { device2.wait(); });
  std::thread host2([&] { a.stream->wait_until(held2); });
  EXPECT_TRUE(until([&] { return a.lane->records.load() > records; })) << "the worker never launched op " << held2;
  EXPECT_TRUE(until([&] { return a.stream->host_sleeps() > sleeps2; })) << "the host's wait never slept";
  EXPECT_EQ(a.stream->host_pollers(), 0);
  EXPECT_TRUE(until([&] { return a.stream->worker_asleep(); })) << "a sleeping host wait kept the worker awake";
  device2.count_down();
  host2.join();
  EXPECT_EQ(hooks.failures.load(), 0);
}

/// The names of this process's threads (/proc/self/task/*/comm).
std::vector<std::string> thread_names() {
  std::vector<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream f(task.path() / "comm");
    std::string name;
    if (std::getline(f, name)) names.push_back(name);
  }
  return names;
}

TEST(StreamCover, AStreamsThreadsCarryItsIndexInTheirNames) {
  Hooks hooks;
  SimStream a(hooks, 7);
  std::string worker_name;
  const std::uint64_t seq = push(
      *a.stream,
      [&worker_name] {
        char name[16] = {};
        pthread_getname_np(pthread_self(), name, sizeof name);
        worker_name = name;
      },
      {}, false);
  a.stream->wait_until(seq);
  EXPECT_EQ(worker_name, "tide-s7");
  const std::vector<std::string> names = thread_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "tide-s7-d"), names.end()) << "no completion thread named";
  EXPECT_NE(std::find(names.begin(), names.end(), "tide-s7"), names.end());
}

TEST(StreamCover, ShutdownWithWorkQueuedCompletesEverything) {
  Hooks hooks;
  std::atomic<int> ran{0};
  {
    SimStream a(hooks, 0), b(hooks, 1);
    std::uint64_t last = 0;
    for (int i = 0; i < 3000; ++i) {
      last = push(*a.stream, [&ran] { ran.fetch_add(1); });
      if (i % 100 == 0) push(*b.stream, [&ran] { ran.fetch_add(1); }, {{a.stream.get(), last}});
      a.stream->reclaim();
      b.stream->reclaim();
    }
    // Both stop (everything queued still runs), then both join.
    a.stream->stop();
    b.stream->stop();
    a.stream->join();
    b.stream->join();
    a.joined = b.joined = true;
    EXPECT_EQ(a.stream->completed(), a.stream->pushed());
    EXPECT_EQ(b.stream->completed(), b.stream->pushed());
  }
  EXPECT_EQ(ran.load(), 3000 + 30);
}

}  // namespace
}  // namespace tide
