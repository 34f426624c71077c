// The desync check: how a divergence is named (pure functions, any number of
// ranks), and, over MPI, that matching programs never trip it, that it costs
// one op per step and no blocker, that a collective skipped on every rank is
// not a desync, and that TIDE_DESYNC_CHECK=0 pushes no check at all.
// The divergences themselves, which break the job, are in desync_main.cc.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "health/desync.h"
#include "mpi_test.h"

namespace tide::test {
namespace {

using detail::CheckRecord;
using detail::CollectiveId;
using detail::CollectiveKind;
using detail::CollectiveSig;

CollectiveId id(CollectiveKind kind, std::int64_t count = -1, DType dtype = DType::f32, int op = -1, int root = -1,
                int devices = 0) {
  CollectiveId c;
  c.kind = kind;
  c.count = count;
  c.dtype = dtype;
  if (op >= 0) c.op = static_cast<ReduceOp>(op);
  c.root = root;
  c.devices = devices;
  return c;
}
const CollectiveSig kSum1000 = id(CollectiveKind::all_reduce, 1000, DType::f32, 0).sig();
const CollectiveSig kSum999 = id(CollectiveKind::all_reduce, 999, DType::f32, 0).sig();
const CollectiveSig kBcast1000 = id(CollectiveKind::broadcast, 1000, DType::f32, -1, 0).sig();
const CollectiveSig kBarrier = id(CollectiveKind::barrier).sig();

CheckRecord record(std::uint64_t base, std::vector<CollectiveSig> window) {
  CheckRecord r;
  r.base = base;
  r.count = base + window.size();
  r.hash = 0;
  for (const auto& s : window) r.hash = detail::chain_hash(r.hash, s);
  r.window = std::move(window);
  return r;
}

TEST(DesyncMessages, NamesTheFirstDifferingCollective) {
  EXPECT_EQ(detail::diagnose({record(10, {kSum1000, kBcast1000}), record(10, {kBcast1000, kSum1000})}),
            "desync at collective #10: rank 0 pushed all_reduce (1000 x f32, sum), rank 1 pushed broadcast "
            "(1000 x f32, root 0)");
  EXPECT_EQ(detail::diagnose({record(10, {kSum1000, kBcast1000}), record(10, {kSum999, kBcast1000})}),
            "desync at collective #10: rank 0 pushed all_reduce (1000 x f32, sum), rank 1 pushed all_reduce "
            "(999 x f32, sum)");
  // The first difference, not the first collective of the window.
  EXPECT_EQ(detail::diagnose({record(0, {kBarrier, kSum1000}), record(0, {kBarrier, kSum999})}).rfind(
                "desync at collective #1: ", 0),
            0u);
}

TEST(DesyncMessages, GroupsRanksThatAgree) {
  EXPECT_EQ(detail::diagnose({record(4, {kSum1000}), record(4, {kBcast1000}), record(4, {kSum1000}),
                              record(4, {kSum1000})}),
            "desync at collective #4: ranks 0,2,3 pushed all_reduce (1000 x f32, sum), rank 1 pushed broadcast "
            "(1000 x f32, root 0)");
}

TEST(DesyncMessages, AnExtraCollectiveOnOneRank) {
  EXPECT_EQ(detail::diagnose({record(7, {kSum1000, kBarrier}), record(7, {kSum1000})}),
            "desync at collective #8: rank 0 pushed barrier, rank 1 pushed none before the check");
}

TEST(DesyncMessages, AgreeingRecordsAreNotADesync) {
  EXPECT_EQ(detail::diagnose({record(3, {kSum1000, kBcast1000}), record(3, {kSum1000, kBcast1000})}), "");
}

TEST(DesyncMessages, ARankThatFailedIsNamedWithItsReason) {
  CheckRecord broken = record(3, {kSum1000});
  broken.broken = true;
  broken.reason = "all_reduce #2 timed out";
  const std::string msg = detail::diagnose({record(3, {kSum1000}), broken});
  EXPECT_EQ(msg.rfind("rank 1 had already failed (rank 1: all_reduce #2 timed out)", 0), 0u) << msg;
  // With a desync too, the desync comes first.
  CheckRecord differs = record(3, {kBcast1000});
  differs.broken = true;
  const std::string both = detail::diagnose({record(3, {kSum1000}), differs});
  EXPECT_EQ(both.rfind("desync at collective #3: ", 0), 0u) << both;
  EXPECT_NE(both.find("rank 1 had already failed"), std::string::npos) << both;
}

TEST(DesyncMessages, BeyondTheWindowTheCountsAreNamed) {
  // The windows keep only the first collectives since the last check: when
  // those agree, the message says how many each rank pushed.
  CheckRecord a = record(0, {kSum1000, kSum1000});
  CheckRecord b = record(0, {kSum1000, kSum1000});
  a.count = 5;
  b.count = 6;
  b.hash = 1;
  const std::string msg = detail::diagnose({a, b});
  EXPECT_EQ(msg.rfind("desync after collective #2: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("rank 0 pushed 5 in all, rank 1 pushed 6 in all"), std::string::npos) << msg;
}

TEST(DesyncMessages, ArrivalNamesWhatEachRankIsAboutToRun) {
  EXPECT_EQ(detail::diagnose_arrival({12, 12}, {kSum1000, kSum1000}), "");
  EXPECT_EQ(detail::diagnose_arrival({12, 12}, {kSum1000, kBcast1000}),
            "desync at collective #12: rank 0 pushed all_reduce (1000 x f32, sum), rank 1 pushed broadcast "
            "(1000 x f32, root 0)");
  EXPECT_EQ(detail::diagnose_arrival({12, 11}, {kSum1000, kSum1000}),
            "desync at collective #12: rank 0 pushed all_reduce (1000 x f32, sum), rank 1 pushed all_reduce "
            "(1000 x f32, sum) as its #11");
}

TEST(DesyncMessages, RankLists) {
  EXPECT_EQ(detail::rank_list({1}), "rank 1");
  EXPECT_EQ(detail::rank_list({0, 2}), "ranks 0,2");
  EXPECT_EQ(detail::rank_list({1, 2}), "ranks 1,2");
  EXPECT_EQ(detail::rank_list({0, 1, 2, 3, 5}), "ranks 0-3,5");
  EXPECT_EQ(detail::rank_list({0, 2, 3, 4, 7, 8}), "ranks 0,2-4,7,8");
}

TEST(DesyncMessages, SignaturesRoundTripAndKeepTheTimeoutFormat) {
  for (const CollectiveId& c :
       {id(CollectiveKind::all_reduce, 16, DType::f64, 1), id(CollectiveKind::broadcast, 0, DType::i32, -1, 3),
        id(CollectiveKind::all_gather, 7), id(CollectiveKind::reduce_scatter, 12, DType::f32, 3),
        id(CollectiveKind::barrier), id(CollectiveKind::split), id(CollectiveKind::all_reduce, 16, DType::f32, 0, -1, 6)}) {
    EXPECT_EQ(CollectiveId::from_sig(c.sig(), 0).describe(), c.describe());
    EXPECT_EQ(CollectiveId::from_sig(c.sig(), 0).sig(), c.sig());
  }
  EXPECT_EQ(id(CollectiveKind::all_reduce, 16, DType::f32, 0).str("group of 2 ranks"),
            "all_reduce #0 (16 x f32, sum, group of 2 ranks)");
  EXPECT_EQ(id(CollectiveKind::all_reduce, 16, DType::f32, 0, -1, 6).describe(),
            "all_reduce (6 devices x 16 x f32, sum)");
  EXPECT_EQ(id(CollectiveKind::barrier).str("2 ranks"), "barrier #0 (2 ranks)");
  EXPECT_NE(kSum1000, kSum999);
  EXPECT_NE(id(CollectiveKind::all_reduce, 1000, DType::f32, 0).sig(), id(CollectiveKind::all_reduce, 1000, DType::f64, 0).sig());
}

TEST(DesyncMessages, TheHashSeesOrder) {
  const std::uint64_t ab = detail::chain_hash(detail::chain_hash(0, kSum1000), kBcast1000);
  const std::uint64_t ba = detail::chain_hash(detail::chain_hash(0, kBcast1000), kSum1000);
  EXPECT_NE(ab, ba);
  EXPECT_NE(detail::chain_hash(0, kSum1000), detail::chain_hash(0, kSum999));
}

// ---- Over MPI ---------------------------------------------------------------

bool checks_expected() {
  const char* v = std::getenv("TIDE_DESYNC_CHECK");
  return world().uses_mpi() && world().size() > 1 && !(v && std::string(v) == "0");
}

int count_ops(const std::vector<TraceEvent>& trace, const std::string& name) {
  int n = 0;
  for (const auto& ev : trace) n += name == ev.op;
  return n;
}

TEST(Desync, ManyMatchingStepsNeverTripTheCheck) {
  EXPECT_EQ(world().desync_check(), checks_expected());
  const int r = world().rank(), p = world().size();
  world().barrier();  // a first collective, so that every step below is checked
  rt().wait_all();
  rt().engine().set_tracing(true);
  auto group = world().split(r % 2, r);
  constexpr int kSteps = 300;
  // Sums of results that are exact in f32, checked once at the end (no
  // blocker inside the loop).
  Tensor total = zeros(Shape{});
  double want = 0;
  for (int s = 0; s < kSteps; ++s) {
    auto step = rt().step();
    // The mix changes from step to step (never from rank to rank).
    const std::int64_t n = 1 + (s * 37) % 500;
    Tensor a = full({n}, r + 1.0);
    world().all_reduce_(a, s % 3 == 0 ? ReduceOp::max : ReduceOp::sum);
    total += sum(a);
    want += static_cast<double>(n) * (s % 3 == 0 ? p : p * (p + 1) / 2);
    if (s % 2 == 0) {
      Tensor b = full({n}, static_cast<double>(r));
      world().broadcast_(b, s % p);
      total += sum(b);
      want += static_cast<double>(n) * (s % p);
    }
    if (s % 5 == 0) {
      total += sum(world().all_gather(full({3}, 1.0)));
      want += 3.0 * p;
    }
    if (s % 7 == 0) {
      total += sum(world().reduce_scatter(full({2 * p}, 1.0)));
      want += 2.0 * p;
    }
    if (s % 11 == 0) {
      Tensor g = full({4}, 1.0);
      group->all_reduce_(g);
      group->check_sync();
      total += sum(g);
      want += 4.0 * group->size();
    }
    if (s % 50 == 0) {  // large: the blocking path, with its arrival check
      Tensor big = full({40000}, 1.0);
      world().all_reduce_(big);
      total += sum(big);
      want += 40000.0 * p;
    }
  }
  EXPECT_NO_THROW(rt().wait_all());
  rt().engine().set_tracing(false);
  const auto trace = rt().engine().take_trace();
  EXPECT_FALSE(world().broken()) << world().failure();
  EXPECT_FALSE(group->broken()) << group->failure();
  EXPECT_EQ(total.item<float>(), static_cast<float>(want));
  const int world_checks = checks_expected() ? kSteps : 0;
  const int group_checks = checks_expected() && group->size() > 1 ? (kSteps + 10) / 11 : 0;
  EXPECT_EQ(count_ops(trace, "desync_check"), world_checks + group_checks);
}

TEST(Desync, ExtraStepsWithoutCollectivesPushNoCheck) {
  // Rank 0 takes extra steps (an evaluation, say) with no collective: they
  // push no check, so the ranks' checks still pair up.
  world().barrier();
  rt().wait_all();
  rt().engine().set_tracing(true);
  for (int s = 0; s < 6; ++s) {
    if (world().rank() == 0 && s % 2 == 0) {
      auto extra = rt().step();
      Tensor t = full({8}, 2.0) * 3.0;
    }
    auto step = rt().step();
    Tensor t = full({8}, 1.0);
    world().all_reduce_(t);
  }
  world().check_sync();
  EXPECT_NO_THROW(rt().wait_all());
  rt().engine().set_tracing(false);
  EXPECT_EQ(count_ops(rt().engine().take_trace(), "desync_check"), checks_expected() ? 7 : 0);
  EXPECT_FALSE(world().broken()) << world().failure();
}

TEST(Desync, AStepIsNotABlocker) {
  world().barrier();
  rt().wait_all();
  const auto before = rt().stats().blockers;
  for (int s = 0; s < 20; ++s) {
    auto step = rt().step();
    Tensor t = full({10}, 1.0);
    world().all_reduce_(t);
  }
  EXPECT_EQ(rt().stats().blockers, before);
  rt().wait_all();
}

TEST(Desync, ACollectiveSkippedOnEveryRankIsNotADesync) {
  // Every rank feeds an all-reduce from an op that fails: the engine skips
  // it everywhere, so the sequences still pair up; the checks of the next
  // steps must agree on the skip and let the program go on.
  world().barrier();
  rt().wait_all();
  for (int s = 0; s < 10; ++s) {
    auto step = rt().step();
    Tensor g = full({64}, 1.0);
    if (s == 2) {
      OpDesc op;
      op.name = "failing_gradient";
      op.device = cpu(0);
      op.fn = [](const OpContext&) { throw std::runtime_error("gradient failed on every rank"); };
      op.writes.add(g.storage());
      current_engine().push(std::move(op));
    }
    world().all_reduce_(g);
  }
  try {
    rt().wait_all();
    ADD_FAILURE() << "the failed op must be reported";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("gradient failed on every rank"), std::string::npos) << e.what();
  }
  for (int s = 0; s < 10; ++s) {
    auto step = rt().step();
    Tensor t = full({8}, 1.0);
    world().all_reduce_(t);
  }
  world().check_sync();
  EXPECT_NO_THROW(rt().wait_all());
  EXPECT_FALSE(world().broken()) << world().failure();
}

TEST(Desync, NoCheckWithoutPeers) {
  auto local = Communicator::local();
  EXPECT_FALSE(local->desync_check());
  Tensor t = full({4}, 1.0);
  local->all_reduce_(t);
  rt().wait_all();
  const auto pushed = rt().stats().ops_pushed;
  local->check_sync();
  local->finish_checks();
  EXPECT_EQ(rt().stats().ops_pushed, pushed);
}

// ---- Failures through the multi-device all-reduce -----------------------------

TEST(Failure, APoisonedTensorReachesEveryDeviceThroughManyDevices) {
  // More tensors than one op may read: the later local-reduction ops must not
  // wash the first one's poison out of the buffer. Every rank fails alike.
  const int k = static_cast<int>(std::count_if(rt().engine().devices().begin(), rt().engine().devices().end(), [](const Device& d) { return d.is_cpu(); }));
  if (k < 5) GTEST_SKIP() << "needs an engine with 5 or more cpu devices (--tide-cpu-devices)";
  std::vector<Tensor> ts;
  for (int d = 0; d < k; ++d) ts.push_back(full({32}, 1.0, TensorOptions{.device = cpu(d)}));
  OpDesc op;
  op.name = "failing_op";
  op.device = cpu(0);
  op.fn = [](const OpContext&) { throw std::runtime_error("device 0 failed"); };
  op.writes.add(ts[0].storage());
  current_engine().push(std::move(op));
  world().all_reduce_(ts);
  for (int d = 0; d < k; ++d) {
    try {
      ts[static_cast<std::size_t>(d)].to_vector<float>();
      ADD_FAILURE() << "tensor " << d << " must carry the failure";
    } catch (const BackendError& e) {
      EXPECT_NE(std::string(e.what()).find("device 0 failed"), std::string::npos) << e.what();
    }
  }
  try {
    rt().wait_all();
  } catch (const BackendError&) {
  }
  EXPECT_FALSE(world().broken()) << world().failure();
}

}  // namespace
}  // namespace tide::test
