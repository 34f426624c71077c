// Collective correctness in the style of MPI test suites: rank r contributes
// values derived from r, so every expected result is exact. Counts 0, 1, odd
// and a few MB; in place and out of place; every collective and dtype.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "collective_values.h"
#include "mpi_test.h"

namespace tide::test {
namespace {


const std::int64_t kCounts[] = {0, 1, 7, 1001, 1 << 20};


TEST(Collectives, AllReduceF32) {
  for (auto op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min})
    check_all_reduce<float>(op, cpu(0), kCounts);
}
TEST(Collectives, AllReduceF64) {
  for (auto op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min})
    check_all_reduce<double>(op, cpu(0), kCounts);
}
TEST(Collectives, AllReduceI32) {
  for (auto op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min})
    check_all_reduce<std::int32_t>(op, cpu(0), kCounts);
}

TEST(Collectives, AllReduceI64) {
  for (auto op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min})
    check_all_reduce<std::int64_t>(op, cpu(0), kCounts);
}

// Counts that run as one exchange of messages (MpiGroup::exchange) combine
// the ranks' values in rank order: a float sum that rounds differently in
// another order gives the same bits on every rank.
TEST(Collectives, ASmallFloatSumIsTheSameBitsOnEveryRank) {
  const int r = world().rank(), p = world().size();
  for (std::int64_t n : {1, 5, 64}) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j)
      v[static_cast<std::size_t>(j)] = r % 2 ? 1.0f / static_cast<float>(3 + r + j) : 1e7f * static_cast<float>(r + 1);
    const std::vector<float> got = world().all_reduce(from_vector(v)).to_vector<float>();
    // Every rank's result, side by side: the same on all.
    const std::vector<float> all = world().all_gather(from_vector(got)).to_vector<float>();
    std::int64_t differ = 0;
    for (int q = 1; q < p; ++q)
      for (std::int64_t j = 0; j < n; ++j)
        differ += std::memcmp(&all[static_cast<std::size_t>(q * n + j)], &all[static_cast<std::size_t>(j)], 4) != 0;
    EXPECT_EQ(differ, 0) << "n=" << n;
    // Added in rank order, as the exchange promises.
    for (std::int64_t j = 0; j < n; ++j) {
      float want = 0;
      for (int q = 0; q < p; ++q)
        want += q % 2 ? 1.0f / static_cast<float>(3 + q + j) : 1e7f * static_cast<float>(q + 1);
      if (p <= 8 && n * 4 * (p - 1) <= 2048) {
        EXPECT_EQ(got[static_cast<std::size_t>(j)], want) << "n=" << n << " j=" << j;
      }
    }
  }
}

// A small max or min gives NaN where any rank has NaN, on every rank.
TEST(Collectives, ASmallMaxOrMinOfNanIsNan) {
  const int r = world().rank(), p = world().size();
  if (p > 8) GTEST_SKIP() << "above 8 ranks small collectives are MPI's, and so is their NaN";
  for (auto op : {ReduceOp::max, ReduceOp::min})
    for (int nan_rank = 0; nan_rank < p; ++nan_rank) {
      std::vector<double> v = {static_cast<double>(r), r == nan_rank ? std::nan("") : 1.0, -static_cast<double>(r)};
      const std::vector<double> got = world().all_reduce(from_vector(v), op).to_vector<double>();
      EXPECT_TRUE(std::isnan(got[1])) << reduce_op_name(op) << " NaN on rank " << nan_rank;
      EXPECT_EQ(got[0], op == ReduceOp::max ? p - 1.0 : 0.0);
      EXPECT_EQ(got[2], op == ReduceOp::max ? 0.0 : 1.0 - p);
    }
}

TEST(Collectives, AvgNeedsAFloatingDtypeAndNothingIsEnqueued) {
  Tensor t = from_vector(std::vector<std::int32_t>{1, 2});
  Tensor uneven = from_vector(std::vector<float>(static_cast<std::size_t>(world().size() + 1)));
  rt().wait_all();
  auto pushed = rt().stats().ops_pushed;
  EXPECT_THROW(world().all_reduce_(t, ReduceOp::avg), DTypeError);
  EXPECT_THROW(world().broadcast_(t, world().size()), ValueError);
  EXPECT_THROW(world().all_reduce_(t, static_cast<ReduceOp>(9)), ValueError);
  EXPECT_THROW((void)world().all_reduce(t, static_cast<ReduceOp>(-1)), ValueError);
  if (world().size() > 1) {
    EXPECT_THROW(world().reduce_scatter(uneven, ReduceOp::sum), ShapeError);
  }
  EXPECT_EQ(rt().stats().ops_pushed, pushed);
}

TEST(Collectives, AHostTensorOfAnotherEngineIsRefusedBeforeTheOtherArguments) {
  // Its engine is not the current one: that is the error, whatever else is
  // wrong with the call (here an avg over i32 and a root out of range).
  std::unique_ptr<Engine> other = Engine::create();
  Tensor t;
  {
    EngineScope scope(*other);
    t = from_vector(std::vector<std::int32_t>{1, 2});
  }
  EXPECT_THROW(world().all_reduce_(t, ReduceOp::avg), UsageError);
  EXPECT_THROW((void)world().all_reduce(t, ReduceOp::avg), UsageError);
  EXPECT_THROW(world().broadcast_(t, world().size()), UsageError);
  EXPECT_THROW((void)world().reduce_scatter(t, ReduceOp::avg), UsageError);
  t = Tensor();
  other->wait_all();
}

TEST(Collectives, ACountBeyondMpisIntIsRefusedBeforeAnythingIsPushed) {
  if (!world().uses_mpi()) GTEST_SKIP() << "a world without MPI has no count limit";
  if (world().size() > 2) GTEST_SKIP() << "8 GiB of address space per rank: run on at most 2 ranks";
  const std::int64_t n = std::int64_t{1} << 31;  // one more than MPI's largest int count
  Tensor big;
  try {
    big = Tensor::empty({n}, DType::f32);  // reserved, never written
  } catch (const std::exception& e) {
    GTEST_SKIP() << "cannot reserve 8 GiB here: " << e.what();
  }
  rt().wait_all();
  const auto pushed = rt().stats().ops_pushed;
  try {
    world().all_reduce_(big);
    ADD_FAILURE() << "an all-reduce of 2^31 elements was pushed";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("2147483648 x f32 is more than MPI's largest count"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(world().broadcast_(big, 0), ValueError);
  EXPECT_EQ(rt().stats().ops_pushed, pushed);
}

template <typename T>
void check_broadcast() {
  const int r = world().rank(), p = world().size(), root = p - 1;
  for (std::int64_t n : kCounts) {
    Tensor t = from_vector(contribution<T>(r, n));
    Tensor copy = world().broadcast(t, root);
    world().broadcast_(t, root);
    EXPECT_EQ(t.to_vector<T>(), contribution<T>(root, n)) << "n=" << n;
    EXPECT_EQ(copy.to_vector<T>(), contribution<T>(root, n)) << "n=" << n;
  }
}
TEST(Collectives, Broadcast) {
  check_broadcast<float>();
  check_broadcast<double>();
  check_broadcast<std::int32_t>();
}

template <typename T>
void check_all_gather() {
  const int r = world().rank(), p = world().size();
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, std::int64_t{100003}}) {
    Tensor g = world().all_gather(from_vector(contribution<T>(r, n)));
    ASSERT_EQ(g.shape(), (Shape{p, n}));
    std::vector<T> got = g.to_vector<T>();
    for (int src = 0; src < p; ++src) {
      std::vector<T> row(got.begin() + src * n, got.begin() + (src + 1) * n);
      EXPECT_EQ(row, contribution<T>(src, n)) << "row " << src << " n=" << n;
    }
  }
}
TEST(Collectives, AllGather) {
  check_all_gather<float>();
  check_all_gather<double>();
  check_all_gather<std::int32_t>();
}

/// Bool tensors are moved (their bytes), never reduced: a pattern of each
/// rank's own, gathered and broadcast; a reduction refused before anything
/// is enqueued.
std::vector<bool> bool_pattern(int rank, std::int64_t n) {
  std::vector<bool> v(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) v[static_cast<std::size_t>(j)] = (j + rank) % 3 == 0;
  return v;
}
TEST(Collectives, BoolTensorsAreMovedAndNeverReduced) {
  const int r = world().rank(), p = world().size();
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{7}, std::int64_t{65537}}) {
    const Tensor g = world().all_gather(from_vector(bool_pattern(r, n)));
    ASSERT_EQ(g.dtype(), DType::b8);
    ASSERT_EQ(g.shape(), (Shape{p, n}));
    const std::vector<bool> got = g.to_vector<bool>();
    for (int src = 0; src < p; ++src)
      EXPECT_EQ(std::vector<bool>(got.begin() + src * n, got.begin() + (src + 1) * n), bool_pattern(src, n))
          << "row " << src << " n=" << n;
    Tensor b = from_vector(bool_pattern(r, n));
    world().broadcast_(b, p - 1);
    EXPECT_EQ(b.to_vector<bool>(), bool_pattern(p - 1, n)) << "n=" << n;
  }
  Tensor m = from_vector(bool_pattern(r, 4));
  rt().wait_all();
  const auto pushed = rt().stats().ops_pushed;
  EXPECT_THROW(world().all_reduce_(m, ReduceOp::max), DTypeError);
  EXPECT_THROW((void)world().all_reduce(m, ReduceOp::sum), DTypeError);
  EXPECT_EQ(rt().stats().ops_pushed, pushed);
}

template <typename T>
void check_reduce_scatter(ReduceOp op) {
  const int r = world().rank(), p = world().size();
  for (std::int64_t block : {std::int64_t{1}, std::int64_t{7}, std::int64_t{65537}}) {
    const std::int64_t n = block * p;
    Tensor out = world().reduce_scatter(from_vector(contribution<T>(r, n)), op);
    ASSERT_EQ(out.shape(), (Shape{block}));
    std::vector<T> got = out.to_vector<T>();
    std::int64_t wrong = 0;
    for (std::int64_t j = 0; j < block; ++j)
      if (got[static_cast<std::size_t>(j)] != expected_reduce<T>(op, p, r * block + j)) ++wrong;
    EXPECT_EQ(wrong, 0) << reduce_op_name(op) << " block=" << block;
  }
}
TEST(Collectives, ReduceScatter) {
  for (auto op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
    check_reduce_scatter<float>(op);
    check_reduce_scatter<double>(op);
  }
  check_reduce_scatter<std::int32_t>(ReduceOp::sum);
}

TEST(Collectives, BarrierIsACountedBlocker) {
  auto before = rt().stats().blockers;
  world().barrier();
  EXPECT_EQ(rt().stats().blockers, before + 1);
}

TEST(Collectives, ConsumersSeeTheReducedValues) {
  // RAW through the comm stream: the product on the compute stream reads
  // the all-reduce's output.
  Tensor t = full({1000}, world().rank() + 1.0);
  world().all_reduce_(t);
  Tensor y = t * 2;
  const float sum = world().size() * (world().size() + 1) / 2.0f;
  for (float v : y.to_vector<float>()) ASSERT_EQ(v, 2 * sum);
}

TEST(Collectives, AWriterWaitsForTheReductionReadingIt) {
  // WAR: the in-place add on the compute stream must not run before the
  // all-reduce has read t (else every rank's +1 would be summed).
  Tensor t = full({1000}, world().rank() + 1.0);
  world().all_reduce_(t);
  t += 1.0;
  const float sum = world().size() * (world().size() + 1) / 2.0f;
  for (float v : t.to_vector<float>()) ASSERT_EQ(v, sum + 1);
}

}  // namespace
}  // namespace tide::test
