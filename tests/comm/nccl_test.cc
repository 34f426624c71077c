// Collectives on CUDA tensors (NCCL), in the style of the host collective
// tests: rank r contributes values derived from r, so every expected result
// is exact. They need one GPU per rank of a node and skip otherwise (with
// the reason), the same way on every rank so that collectives still pair.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../gpu_ranks_util.h"
#include "collective_values.h"
#include "mpi_test.h"

#include <tide/comm/reducer.h>

namespace tide::test {
namespace {

#define TIDE_REQUIRE_NCCL() TIDE_REQUIRE_NCCL_ON_EVERY_RANK()


const std::int64_t kCounts[] = {0, 1, 1001, 1 << 20};

Tensor on_gpu(const Tensor& host) { return copy_to(host, rt().device()); }


TEST(NcclCollectives, AllReduceF32) {
  TIDE_REQUIRE_NCCL();
  for (auto op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min})
    check_all_reduce<float>(op, rt().device(), kCounts);
}
TEST(NcclCollectives, AllReduceF64) {
  TIDE_REQUIRE_NCCL();
  for (auto op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min})
    check_all_reduce<double>(op, rt().device(), kCounts);
}
TEST(NcclCollectives, AllReduceI32) {
  TIDE_REQUIRE_NCCL();
  for (auto op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min})
    check_all_reduce<std::int32_t>(op, rt().device(), kCounts);
}

TEST(NcclCollectives, BroadcastFromEveryRoot) {
  TIDE_REQUIRE_NCCL();
  const int r = world().rank(), p = world().size();
  for (int root = 0; root < p; ++root) {
    for (std::int64_t n : kCounts) {
      Tensor t = on_gpu(from_vector(contribution<float>(r, n)));
      Tensor copy = world().broadcast(t, root);
      world().broadcast_(t, root);
      EXPECT_EQ(t.to_vector<float>(), contribution<float>(root, n)) << "root " << root << " n=" << n;
      EXPECT_EQ(copy.to_vector<float>(), contribution<float>(root, n)) << "root " << root << " n=" << n;
    }
  }
}

TEST(NcclCollectives, AllGatherStacksRanksInOrder) {
  TIDE_REQUIRE_NCCL();
  const int r = world().rank(), p = world().size();
  for (std::int64_t n : kCounts) {
    Tensor t = on_gpu(from_vector(contribution<std::int32_t>(r, n)));
    Tensor all = world().all_gather(t);
    EXPECT_EQ(all.shape(), (Shape{p, n}));
    std::vector<std::int32_t> want;
    for (int q = 0; q < p; ++q) {
      auto c = contribution<std::int32_t>(q, n);
      want.insert(want.end(), c.begin(), c.end());
    }
    EXPECT_EQ(all.to_vector<std::int32_t>(), want) << "n=" << n;
  }
}

TEST(NcclCollectives, ReduceScatterGivesEachRankItsBlock) {
  TIDE_REQUIRE_NCCL();
  const int r = world().rank(), p = world().size();
  for (std::int64_t block : {std::int64_t{0}, std::int64_t{1}, std::int64_t{1001}}) {
    Tensor t = on_gpu(from_vector(contribution<double>(r, block * p)));
    Tensor mine = world().reduce_scatter(t, ReduceOp::sum);
    EXPECT_EQ(mine.shape(), (Shape{block}));
    std::vector<double> got = mine.to_vector<double>();
    std::int64_t wrong = 0;
    for (std::int64_t j = 0; j < block; ++j)
      if (got[static_cast<std::size_t>(j)] != expected_reduce<double>(ReduceOp::sum, p, r * block + j)) ++wrong;
    EXPECT_EQ(wrong, 0) << "block " << block;
  }
}

// RAW: the all-reduce (comm stream) sees the compute stream's write; WAR: a
// write pushed after it does not change what it reduces.
TEST(NcclCollectives, OrdersAgainstTheComputeStream) {
  TIDE_REQUIRE_NCCL();
  const int p = world().size();
  const std::int64_t n = 1 << 20;
  Tensor t = full({n}, 1.0, {DType::f32, rt().device()});
  add_(t, 2.0);                // compute stream: 3 everywhere
  world().all_reduce_(t);      // comm stream: 3p
  Tensor seen = mul(t, 1.0);   // compute stream, after the reduce (RAW)
  mul_(t, 0.0);                // compute stream, after the reduce has read t (WAR)
  add_(t, -1.0);
  std::vector<float> got = seen.to_vector<float>();
  std::int64_t wrong = 0;
  for (float v : got)
    if (v != 3.0f * static_cast<float>(p)) ++wrong;
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(static_cast<std::size_t>(n), -1.0f));
}

TEST(NcclCollectives, BadInputIsRefusedBeforeAnythingIsQueued) {
  TIDE_REQUIRE_NCCL();
  Tensor i = full({4}, 1.0, {DType::i32, rt().device()});
  Tensor f = full({static_cast<std::int64_t>(world().size()) + 1}, 1.0, {DType::f32, rt().device()});
  rt().wait_all();
  const auto pushed = rt().stats().ops_pushed;
  EXPECT_THROW(world().all_reduce_(i, ReduceOp::avg), DTypeError);
  EXPECT_THROW(world().broadcast_(f, world().size()), ValueError);
  if (world().size() > 1) {
    EXPECT_THROW(world().reduce_scatter(f), ShapeError);
  }
  std::vector<Tensor> two = {f, full({f.numel()}, 1.0, {DType::f32, cpu(0)})};
  EXPECT_THROW(world().all_reduce_(two), DeviceError);
  EXPECT_EQ(rt().stats().ops_pushed, pushed + 1) << "only the cpu tensor's fill";
}

// Several GPUs in one rank: one tensor per GPU, one NCCL communicator over
// every rank's GPUs. Needs a node to itself (each rank takes every GPU).
TEST(NcclCollectives, SeveralGpusPerRankReduceTogether) {
  TIDE_REQUIRE_NCCL();
  int gpus = 0;
  for (const Device& d : rt().engine().devices()) gpus += d.is_cuda() ? 1 : 0;
  const bool async = rt().engine().kind() == EngineKind::async;  // the naive engine refuses several GPUs
  Tensor ok = from_vector(std::vector<std::int32_t>{gpus >= 2 && rt().local_size() == 1 && async ? gpus : 0});
  world().all_reduce_(ok, ReduceOp::min);
  const int k = ok.item<std::int32_t>();
  if (k < 2) GTEST_SKIP() << "needs the async engine and every rank alone on a node with 2 GPUs or more";
  const int r = world().rank(), p = world().size();
  const std::int64_t n = 1001;
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max}) {
    std::vector<Tensor> ts;
    for (int i = 0; i < k; ++i) ts.push_back(copy_to(from_vector(contribution<float>(r * k + i, n)), cuda(i)));
    world().all_reduce_(ts, op);
    for (int i = 0; i < k; ++i) {
      EXPECT_EQ(ts[static_cast<std::size_t>(i)].device(), cuda(i));
      std::vector<float> got = ts[static_cast<std::size_t>(i)].to_vector<float>();
      std::int64_t wrong = 0;
      for (std::int64_t j = 0; j < n; ++j)
        if (got[static_cast<std::size_t>(j)] != expected_reduce<float>(op, p * k, j)) ++wrong;
      EXPECT_EQ(wrong, 0) << reduce_op_name(op) << " on cuda:" << i;
    }
  }
}

// The reducer on GPU parameters: buckets of several gradients are packed,
// reduced and unpacked on the GPU's comm stream.
TEST(NcclCollectives, ReducerAveragesGradientsOnTheGpu) {
  TIDE_REQUIRE_NCCL();
  const int rank = world().rank(), size = world().size();
  const std::vector<std::int64_t> sizes = {7, 1, 33, 20, 5, 64};
  for (double cap : {25.0, 100.0 / (1 << 20)}) {  // one bucket; a bucket per gradient or two
    std::vector<Tensor> p;
    for (auto n : sizes) p.push_back(zeros({n}, {DType::f32, rt().device()}));
    GradientReducer r(world(), p, {.bucket_mb = cap});
    for (int step = 0; step < 2; ++step) {
      for (int i = static_cast<int>(p.size()) - 1; i >= 0; --i) {
        std::vector<float> g(static_cast<std::size_t>(sizes[static_cast<std::size_t>(i)]));
        for (std::size_t j = 0; j < g.size(); ++j) g[j] = static_cast<float>((rank + 1) * (i + 1) * (step + 1) + j);
        r.push_gradient(i, on_gpu(from_vector(g)));
      }
      for (int i = 0; i < static_cast<int>(p.size()); ++i) {
        EXPECT_EQ(r.reduced(i).device(), rt().device());
        std::vector<float> got = r.reduced(i).to_vector<float>();
        for (std::size_t j = 0; j < got.size(); ++j) {
          const double want = (size + 1) / 2.0 * (i + 1) * (step + 1) + static_cast<double>(j);
          // Exact over 2 ranks; NCCL's average over 3 scales each
          // contribution by 1/3 first, a few units in the last place off.
          const bool exact = (size & (size - 1)) == 0;
          const double tolerance = exact ? 0.0 : 4.0 * size * std::numeric_limits<float>::epsilon() * std::abs(want);
          ASSERT_LE(std::abs(static_cast<double>(got[j]) - want), tolerance)
              << "param " << i << " element " << j << " " << r.describe();
        }
      }
      r.finish_step();
    }
  }
}

TEST(NcclCollectives, BuildHasNcclWhereExpected) {
#ifdef TIDE_TEST_EXPECT_NCCL
  EXPECT_TRUE(Communicator::nccl_built()) << "CMake found NCCL, so the build must run CUDA collectives with it";
#else
  EXPECT_FALSE(Communicator::nccl_built()) << "CMake found no NCCL, yet the build claims it";
#endif
}

}  // namespace
}  // namespace tide::test
