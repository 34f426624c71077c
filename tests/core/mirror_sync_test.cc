// The engine's side of mirrors (<tide/core/mirror.h>), without the ops
// library: mirrors of int64 buffers that pick every k-th element, whose
// pulls and write-backs run on the copy stream while the writes that start
// them run on other streams and devices, held for a while so that several
// are in flight. A random program of increments through the block, its
// mirrors and a mirror of a mirror, some dropped while their ops are still
// queued (their storages then die on a worker), is checked against a host
// model. Under ThreadSanitizer this is the check that the frontend's
// follower lists and the workers' frees do not race.
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <tide/core/mirror.h>

#include "test_util.h"

namespace tide::test {
namespace {

/// Picks elements offset, offset + step, ... (n of them) of its source.
class EveryKth final : public Mirror {
 public:
  EveryKth(std::shared_ptr<Storage> source, std::size_t offset, std::size_t step, std::size_t n)
      : source_(std::move(source)), offset_(offset), step_(step), n_(n) {}
  const std::shared_ptr<Storage>& source() const override { return source_; }
  void pull(Engine& e, const std::shared_ptr<Storage>& self) override {
    push(e, "pull", source_->device(), StreamKind::copy, {source_}, {self},
         [o = offset_, s = step_, n = n_](const OpContext& c) {
           busy_us(20);
           for (std::size_t i = 0; i < n; ++i) c.out<std::int64_t>(0)[i] = c.in<std::int64_t>(0)[o + i * s];
         });
  }
  void push_back(Engine& e, const std::shared_ptr<Storage>& self) override {
    push(e, "write_back", source_->device(), StreamKind::copy, {self}, {source_},
         [o = offset_, s = step_, n = n_](const OpContext& c) {
           busy_us(20);
           for (std::size_t i = 0; i < n; ++i) c.out<std::int64_t>(0)[o + i * s] = c.in<std::int64_t>(0)[i];
         });
  }

 private:
  std::shared_ptr<Storage> source_;
  std::size_t offset_, step_, n_;
};

struct Handle {
  std::shared_ptr<Storage> s;
  std::vector<std::size_t> at;  // the block's element behind each of s's
};

Handle mirror(Engine& e, const Handle& of, std::size_t offset, std::size_t step, std::size_t n) {
  Handle h{buffer(e, of.s->device(), n), {}};
  for (std::size_t i = 0; i < n; ++i) h.at.push_back(of.at[offset + i * step]);
  std::make_shared<EveryKth>(of.s, offset, step, n)->pull(e, h.s);  // filled before it follows
  attach_mirror(h.s, std::make_shared<EveryKth>(of.s, offset, step, n));
  return h;
}

/// A block of `n` zeros on cpu(0), each element its own index in the model.
Handle zeroed_block(Engine& e, std::size_t n) {
  Handle h{buffer(e, cpu(0), n), {}};
  for (std::size_t i = 0; i < n; ++i) h.at.push_back(i);
  push(e, "init", cpu(0), StreamKind::compute, {}, {h.s}, [n](const OpContext& c) {
    for (std::size_t i = 0; i < n; ++i) c.out<std::int64_t>(0)[i] = 0;
  });
  return h;
}

class MirrorSync : public ::testing::TestWithParam<EngineKind> {};

TEST_P(MirrorSync, WritesThroughAnySideReachEveryOtherInStreamOrder) {
  EngineFixture e(GetParam(), 2);
  constexpr std::size_t N = 24;
  std::vector<std::int64_t> model(N);
  Handle base = zeroed_block(*e, N);
  std::mt19937 gen(7);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  std::vector<Handle> h{base};
  auto remake = [&] {
    h.resize(1);
    h.push_back(mirror(*e, h[0], 1, 3, 8));   // 1, 4, ..., 22
    h.push_back(mirror(*e, h[0], 0, 2, 12));  // the even elements
    h.push_back(mirror(*e, h[2], 1, 2, 6));   // 2, 6, ..., 22: a mirror of a mirror
  };
  remake();
  const StreamKind kinds[] = {StreamKind::compute, StreamKind::copy, StreamKind::comm};
  for (int step = 0; step < 300; ++step) {
    const std::size_t which = static_cast<std::size_t>(uniform(0, static_cast<int>(h.size()) - 1));
    const std::int64_t add = uniform(1, 9);
    const StreamKind kind = kinds[uniform(0, 2)];
    push(*e, "add", cpu(0), kind, {}, {h[which].s}, [add, n = h[which].at.size()](const OpContext& c) {
      busy_us(10);
      for (std::size_t i = 0; i < n; ++i) c.out<std::int64_t>(0)[i] += add;
    });
    for (std::size_t i : h[which].at) model[i] += add;
    if (step % 50 == 49) remake();  // the old mirrors are dropped with their ops queued
    if (step % 25 == 24) {
      e->wait_all();
      for (const Handle& x : h)
        for (std::size_t i = 0; i < x.at.size(); ++i)
          ASSERT_EQ(values(x.s)[i], model[x.at[i]]) << "handle of " << x.at.size() << " elements, element " << i
                                                    << ", after step " << step;
    }
  }
  // Dropped mirrors are forgotten at the next write of their source (once
  // the ops that held them have let go, which a worker may do just after
  // they complete).
  h.resize(1);
  for (int i = 0; i < 200 && !base.s->var().followers.empty(); ++i) {
    e->wait_all();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    push(*e, "touch", cpu(0), StreamKind::compute, {}, {base.s}, [](const OpContext&) {});
  }
  EXPECT_TRUE(base.s->var().followers.empty());
}

TEST_P(MirrorSync, AnOpWritingABlockAndSeveralOfItsMirrorsKeepsEveryWrite) {
  EngineFixture e(GetParam(), 1);
  constexpr std::size_t N = 8;
  Handle base = zeroed_block(*e, N);
  Handle evens = mirror(*e, base, 0, 2, 4), odds = mirror(*e, base, 1, 2, 4);
  Handle quarter = mirror(*e, evens, 0, 2, 2);  // elements 0 and 4
  Handle whole = mirror(*e, base, 0, 1, N);
  push(*e, "two_mirrors", cpu(0), StreamKind::compute, {}, {evens.s, odds.s}, [](const OpContext& c) {
    for (int i = 0; i < 4; ++i) {
      c.out<std::int64_t>(0)[i] = 1;
      c.out<std::int64_t>(1)[i] = 2;
    }
  });
  e->wait_all();
  for (std::size_t i = 0; i < N; ++i) EXPECT_EQ(values(base.s)[i], i % 2 ? 2 : 1) << i;
  for (std::size_t i = 0; i < N; ++i) EXPECT_EQ(values(whole.s)[i], i % 2 ? 2 : 1) << i;
  EXPECT_EQ(values(quarter.s)[0], 1);
  EXPECT_EQ(values(quarter.s)[1], 1);
  // A mirror and its grandchild in one op: both reach the block.
  push(*e, "chain", cpu(0), StreamKind::compute, {}, {quarter.s, odds.s}, [](const OpContext& c) {
    c.out<std::int64_t>(0)[1] = 9;
    c.out<std::int64_t>(1)[3] = 8;
  });
  e->wait_all();
  EXPECT_EQ(values(base.s)[4], 9);
  EXPECT_EQ(values(base.s)[7], 8);
  EXPECT_EQ(values(evens.s)[2], 9);
  EXPECT_EQ(values(whole.s)[4], 9);
  EXPECT_EQ(values(whole.s)[7], 8);
}

TEST_P(MirrorSync, OverlappingWritesInOneTreeAgreeAndPartWritesAreRefused) {
  EngineFixture e(GetParam(), 1);
  constexpr std::size_t N = 6;
  Handle base = zeroed_block(*e, N);
  Handle low = mirror(*e, base, 0, 1, 4), high = mirror(*e, base, 2, 1, 4);  // both hold elements 2 and 3
  // One op writes both whole: whichever write-back lands last wins at the
  // shared elements, and every handle agrees with the block afterwards.
  push(*e, "both", cpu(0), StreamKind::compute, {}, {low.s, high.s}, [](const OpContext& c) {
    for (int i = 0; i < 4; ++i) {
      c.out<std::int64_t>(0)[i] = 1;
      c.out<std::int64_t>(1)[i] = 2;
    }
  });
  e->wait_all();
  for (const Handle* h : {&low, &high})
    for (std::size_t i = 0; i < h->at.size(); ++i) EXPECT_EQ(values(h->s)[i], values(base.s)[h->at[i]]) << i;
  EXPECT_EQ(values(base.s)[0], 1);
  EXPECT_EQ(values(base.s)[5], 2);
  // Part of a mirror and another view of the block in one op: a whole
  // write-back would lose a write, so it is refused, with nothing queued.
  auto part = std::make_shared<Storage>(low.s, 0, 8);  // element 0 of low
  const std::uint64_t pushed = e->stats().ops_pushed, version = base.s->var().version;
  EXPECT_THROW(push(*e, "part", cpu(0), StreamKind::compute, {}, {part, base.s}, [](const OpContext&) {}),
               UsageError);
  EXPECT_EQ(e->stats().ops_pushed, pushed);
  EXPECT_EQ(base.s->var().version, version);
  push(*e, "part alone", cpu(0), StreamKind::compute, {}, {part}, [](const OpContext& c) {
    c.out<std::int64_t>(0)[0] = 7;
  });
  e->wait_all();
  EXPECT_EQ(values(base.s)[0], 7);
  EXPECT_EQ(values(low.s)[0], 7);
}

TEST_P(MirrorSync, AttachingIsChecked) {
  EngineFixture e(GetParam(), 1);
  auto src = buffer(*e, cpu(0), 4), m = buffer(*e, cpu(0), 2);
  EXPECT_THROW(attach_mirror(src, std::make_shared<EveryKth>(src, 0, 2, 2)), UsageError);  // itself
  auto view = std::make_shared<Storage>(m, 0, 8);
  EXPECT_THROW(attach_mirror(view, std::make_shared<EveryKth>(src, 0, 2, 2)), UsageError);  // a view
  attach_mirror(m, std::make_shared<EveryKth>(src, 0, 2, 2));
  EXPECT_NE(mirror_of(*view), nullptr);  // a view of a mirror is one
  EXPECT_THROW(attach_mirror(m, std::make_shared<EveryKth>(src, 1, 2, 2)), UsageError);  // twice
  auto m2 = buffer(*e, cpu(0), 1);
  attach_mirror(m2, std::make_shared<EveryKth>(m, 0, 1, 1));
  EXPECT_THROW(attach_mirror(src, std::make_shared<EveryKth>(m2, 0, 1, 1)), UsageError);  // a cycle
}

INSTANTIATE_TEST_SUITE_P(Engines, MirrorSync, ::testing::Values(EngineKind::async, EngineKind::naive),
                         [](const auto& info) { return std::string(engine_kind_name(info.param)); });

}  // namespace
}  // namespace tide::test
