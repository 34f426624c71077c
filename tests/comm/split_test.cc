// Sub-group communicators: groups, ranks and sizes as MPI_Comm_split makes
// them, collectives inside each group, and world and group collectives
// interleaved in one program (all on cpu:0's comm stream).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mpi_test.h"

namespace tide::test {
namespace {

/// The world ranks with rank % 2 == parity, in order.
std::vector<int> ranks_of_parity(int parity) {
  std::vector<int> ranks;
  for (int r = parity; r < world().size(); r += 2) ranks.push_back(r);
  return ranks;
}

double sum_of_rank_plus_one(const std::vector<int>& ranks) {
  double s = 0;
  for (int r : ranks) s += r + 1;
  return s;
}

TEST(Split, EvenAndOddRanks) {
  const int r = world().rank(), parity = r % 2;
  auto group = world().split(parity, r);
  const std::vector<int> members = ranks_of_parity(parity);
  EXPECT_EQ(group->size(), static_cast<int>(members.size()));
  EXPECT_EQ(group->rank(), r / 2);
  EXPECT_EQ(group->uses_mpi(), world().uses_mpi());
  EXPECT_FALSE(group->broken());

  Tensor t = full({1001}, r + 1.0);
  group->all_reduce_(t);
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(1001, static_cast<float>(sum_of_rank_plus_one(members))));

  // Row i of the gather is the group's i-th member, by world rank.
  Tensor g = group->all_gather(from_vector(std::vector<std::int32_t>{r}));
  EXPECT_EQ(g.to_vector<std::int32_t>(), std::vector<std::int32_t>(members.begin(), members.end()));
}

TEST(Split, KeyOrdersTheGroup) {
  const int r = world().rank(), p = world().size();
  auto reversed = world().split(7, p - r);  // keys p - r: the world in reverse order
  EXPECT_EQ(reversed->size(), p);
  EXPECT_EQ(reversed->rank(), p - 1 - r);
  Tensor g = reversed->all_gather(from_vector(std::vector<std::int32_t>{r}));
  std::vector<std::int32_t> want;
  for (int i = p - 1; i >= 0; --i) want.push_back(i);
  EXPECT_EQ(g.to_vector<std::int32_t>(), want);

  // Equal keys: ordered by rank in the parent.
  auto same_key = world().split(0, 0);
  EXPECT_EQ(same_key->rank(), r);
}

TEST(Split, OneGroupPerRank) {
  const int r = world().rank();
  auto alone = world().split(r);
  EXPECT_EQ(alone->size(), 1);
  EXPECT_EQ(alone->rank(), 0);
  Tensor t = from_vector(std::vector<double>{r + 0.5, 2.0});
  alone->all_reduce_(t, ReduceOp::avg);
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{r + 0.5, 2.0}));
}

TEST(Split, WorldAndGroupCollectivesInterleave) {
  // Pushed back to back with no blocker in between; every rank pushes them
  // in the same order, so each communicator sees its own sequence.
  const int r = world().rank(), p = world().size(), parity = r % 2;
  auto group = world().split(parity, r);
  const std::vector<int> members = ranks_of_parity(parity);

  Tensor a = full({100}, r + 1.0);
  Tensor b = full({100}, r + 1.0);
  Tensor c = from_vector(std::vector<std::int32_t>{r * 10, r * 10 + 1});
  Tensor d = from_vector(std::vector<std::int32_t>{r, -r});
  Tensor big = full({1 << 18}, 1.0);  // over 64 KB: the barrier-then-blocking path
  world().all_reduce_(a);
  group->all_reduce_(b, ReduceOp::max);
  group->broadcast_(c, group->size() - 1);
  world().all_reduce_(d, ReduceOp::min);
  group->all_reduce_(big);
  Tensor gathered = world().all_gather(from_vector(std::vector<std::int32_t>{r}));
  group->barrier();
  world().all_reduce_(a, ReduceOp::max);  // a already holds the world sum

  const float world_sum = p * (p + 1) / 2.0f;
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(100, world_sum));
  EXPECT_EQ(b.to_vector<float>(), std::vector<float>(100, static_cast<float>(members.back() + 1)));
  const int last = members.back();
  EXPECT_EQ(c.to_vector<std::int32_t>(), (std::vector<std::int32_t>{last * 10, last * 10 + 1}));
  EXPECT_EQ(d.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, -(p - 1)}));
  EXPECT_EQ(big.to_vector<float>(), std::vector<float>(1 << 18, static_cast<float>(members.size())));
  std::vector<std::int32_t> all(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) all[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(gathered.to_vector<std::int32_t>(), all);
}

TEST(Split, AGroupOfAGroup) {
  // Split the world in halves by parity, then each half by rank / 2 < 1
  // (its first member alone, the rest together).
  const int r = world().rank(), parity = r % 2;
  auto half = world().split(parity, r);
  auto part = half->split(half->rank() == 0 ? 0 : 1, half->rank());
  const int want_size = half->rank() == 0 ? 1 : half->size() - 1;
  EXPECT_EQ(part->size(), want_size);
  EXPECT_EQ(part->rank(), half->rank() == 0 ? 0 : half->rank() - 1);
  Tensor t = full({3}, 1.0, {DType::f64});
  part->all_reduce_(t);
  EXPECT_EQ(t.to_vector<double>(), std::vector<double>(3, want_size));
}

TEST(Split, IsACountedBlockerAndChecksTheColor) {
  rt().wait_all();
  const auto blockers = rt().stats().blockers;
  auto group = world().split(0);
  EXPECT_EQ(group->size(), world().size());
  if (world().uses_mpi()) {
    EXPECT_EQ(rt().stats().blockers, blockers + 1);
  }
  const auto pushed = rt().stats().ops_pushed;
  EXPECT_THROW(world().split(-1), ValueError);
  EXPECT_EQ(rt().stats().ops_pushed, pushed);
}

TEST(Split, ErrorsNameTheGroup) {
  if (!world().uses_mpi()) GTEST_SKIP() << "a local world splits into local communicators, which are not groups";
  auto group = world().split(world().rank() % 2, world().rank());
  Tensor t = zeros({2});
  try {
    group->broadcast_(t, group->size());
    ADD_FAILURE() << "a root outside the group must throw";
  } catch (const ValueError& e) {
    const std::string want = "this group of " + std::to_string(group->size()) +
                             (group->size() == 1 ? " rank" : " ranks");
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
}

TEST(Split, DroppingAGroupLeavesTheWorldUsable) {
  for (int i = 0; i < 5; ++i) {
    auto group = world().split(world().rank() % 2, world().rank());
    Tensor t = full({4}, 1.0);
    group->all_reduce_(t);
    // `group` goes while its all-reduce may still be queued: it is freed on
    // the comm stream, after it.
  }
  Tensor t = full({4}, 1.0);
  world().all_reduce_(t);
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(4, static_cast<float>(world().size())));
  EXPECT_FALSE(world().broken());
}

TEST(Split, OfALocalCommunicator) {
  auto local = Communicator::local();
  auto group = local->split(3, 5);
  EXPECT_FALSE(group->uses_mpi());
  EXPECT_EQ(group->size(), 1);
  EXPECT_EQ(group->rank(), 0);
  Tensor t = from_vector(std::vector<float>{1.5f, -2.0f});
  Tensor out = group->all_reduce(t, ReduceOp::sum);
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_THROW(local->split(-2), ValueError);
}

TEST(Split, MultiDeviceAllReduceOnAGroup) {
  const int devices = static_cast<int>(std::count_if(rt().engine().devices().begin(), rt().engine().devices().end(), [](const Device& d) { return d.is_cpu(); }));
  if (devices < 2) GTEST_SKIP() << "needs an engine with 2 cpu devices (--tide-cpu-devices)";
  const int r = world().rank(), parity = r % 2;
  auto group = world().split(parity, r);
  // Device d of rank r holds r * 100 + d: the group sum is exact.
  std::vector<Tensor> ts;
  double want = 0;
  for (int d = 0; d < devices; ++d) ts.push_back(full({64}, r * 100.0 + d, {DType::f64, cpu(d)}));
  for (int m : ranks_of_parity(parity))
    for (int d = 0; d < devices; ++d) want += m * 100.0 + d;
  group->all_reduce_(ts);
  for (int d = 0; d < devices; ++d)
    EXPECT_EQ(ts[static_cast<std::size_t>(d)].to_vector<double>(), std::vector<double>(64, want)) << "cpu:" << d;
}

}  // namespace
}  // namespace tide::test
