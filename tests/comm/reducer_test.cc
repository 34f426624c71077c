// GradientReducer: bucket layout (the small first bucket included), reduced
// values, accumulation under NoSync, misuse, and that a bucket's reduction
// is pushed, and starts, while backward is still computing.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <tide/comm/data_parallel.h>
#include <tide/comm/reducer.h>
#include <tide/ops/autograd.h>

#include "mpi_test.h"

namespace tide::test {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::vector<Tensor> params_of(const std::vector<std::int64_t>& numels, DType dt = DType::f32) {
  std::vector<Tensor> p;
  for (auto n : numels) p.push_back(zeros(Shape{n}, {dt}));
  return p;
}

TEST(Reducer, BucketsFromTheLastParameterBackUnderTheCap) {
  // 1000 f32 = 4000 bytes; a 10000-byte cap holds two of them.
  auto p = params_of({1000, 1000, 1000, 5000, 1000});
  GradientReducer r(world(), p, {.bucket_mb = 10000 / kMiB});
  const auto& b = r.buckets();
  ASSERT_EQ(b.size(), 4u) << r.describe();
  EXPECT_EQ(b[0].params, std::vector<int>{4}) << "the next gradient would pass the cap";
  EXPECT_EQ(b[1].params, std::vector<int>{3}) << "a gradient over the cap gets a bucket of its own";
  EXPECT_EQ(b[2].params, (std::vector<int>{2, 1}));
  EXPECT_EQ(b[3].params, std::vector<int>{0});
  EXPECT_EQ(b[1].bytes, 20000u);
  EXPECT_EQ(r.describe(), "4 buckets: [1 param, 3.9 KiB] [1 param, 19.5 KiB] [2 params, 7.8 KiB] [1 param, 3.9 KiB]");
}

TEST(Reducer, TheFirstBucketHasASmallCapOfItsOwn) {
  // 1000 f32 = 4000 bytes. A first cap of 4000 bytes takes one gradient,
  // the 10000-byte cap after it two.
  auto p = params_of({1000, 1000, 1000, 1000, 1000});
  GradientReducer small_first(world(), p, {.bucket_mb = 10000 / kMiB, .first_bucket_mb = 4000 / kMiB});
  EXPECT_EQ(small_first.describe(), "3 buckets: [1 param, 3.9 KiB] [2 params, 7.8 KiB] [2 params, 7.8 KiB]");
  EXPECT_EQ(small_first.buckets()[0].params, std::vector<int>{4}) << "the gradient backward produces first";
  // 0, or a first cap above the others', gives every bucket the same cap.
  for (double first : {0.0, 1.0}) {
    GradientReducer same(world(), p, {.bucket_mb = 10000 / kMiB, .first_bucket_mb = first});
    EXPECT_EQ(same.describe(), "3 buckets: [2 params, 7.8 KiB] [2 params, 7.8 KiB] [1 param, 3.9 KiB]") << first;
  }
  // The defaults on the trainer's default model (64 -> 512 -> 512 -> 10,
  // weight then bias per layer): the last two layers' small gradients fill
  // the first 1 MiB bucket; the 1 MiB weight opens the second.
  GradientReducer defaults(world(), params_of({64 * 512, 512, 512 * 512, 512, 512 * 10, 10}));
  EXPECT_EQ(defaults.describe(), "2 buckets: [3 params, 22.0 KiB] [3 params, 1.1 MiB]");
  GradientReducer one_bucket(world(), params_of({64 * 512, 512, 512 * 512, 512, 512 * 10, 10}),
                             {.first_bucket_mb = 0});
  EXPECT_EQ(one_bucket.describe(), "1 bucket: [6 params, 1.1 MiB]");
  for (double bad : {-1.0, std::nan("")})
    EXPECT_THROW(GradientReducer(world(), p, {.first_bucket_mb = bad}), ValueError) << bad;
}

TEST(Reducer, AveragesEveryGradientAcrossRanks) {
  const int rank = world().rank(), size = world().size();
  for (double cap : {25.0, 100 / kMiB}) {  // one bucket; a bucket per gradient or two
    auto p = params_of({7, 1, 33, 20, 5, 64});
    GradientReducer r(world(), p, {.bucket_mb = cap});
    for (int step = 0; step < 3; ++step) {
      for (int i = static_cast<int>(p.size()) - 1; i >= 0; --i) {
        std::vector<float> g(static_cast<std::size_t>(p[static_cast<std::size_t>(i)].numel()));
        for (std::size_t j = 0; j < g.size(); ++j) g[j] = static_cast<float>((rank + 1) * (i + 1) * (step + 1) + j);
        r.push_gradient(i, from_vector(g));
      }
      for (int i = 0; i < static_cast<int>(p.size()); ++i) {
        std::vector<float> got = r.reduced(i).to_vector<float>();
        for (std::size_t j = 0; j < got.size(); ++j) {
          const double want = (size + 1) / 2.0 * (i + 1) * (step + 1) + static_cast<double>(j);
          ASSERT_EQ(got[j], static_cast<float>(want)) << "param " << i << " element " << j << " " << r.describe();
        }
      }
      r.finish_step();
    }
  }
}

/// Micro-batch `k`'s gradient of parameter `i` on this rank: small whole
/// numbers, so that sums and averages over 2 or 3 ranks are exact in f32.
Tensor micro_gradient(const Tensor& param, int i, int k, int step) {
  std::vector<float> g(static_cast<std::size_t>(param.numel()));
  for (std::size_t j = 0; j < g.size(); ++j)
    g[j] = static_cast<float>((world().rank() + 1) * (i + 1) * (k + 1) + step + static_cast<double>(j));
  return from_vector(g);
}

TEST(Reducer, NoSyncAccumulatesAndTheNextMicroBatchReducesTheSum) {
  const int size = world().size();
  for (double cap : {25.0, 100 / kMiB}) {  // one bucket; a bucket per gradient or two
    auto p = params_of({7, 1, 33, 20, 5, 64});
    const int n = static_cast<int>(p.size());
    GradientReducer r(world(), p, {.bucket_mb = cap});
    for (int step = 0; step < 2; ++step) {  // the second step must not see the first one's sums
      const int micro = 3;
      for (int k = 0; k < micro; ++k) {
        std::optional<GradientReducer::NoSync> local;
        if (k + 1 < micro) local.emplace(r);
        EXPECT_EQ(r.syncing(), k + 1 == micro);
        for (int i = n - 1; i >= 0; --i) r.push_gradient(i, micro_gradient(p[static_cast<std::size_t>(i)], i, k, step));
        if (k + 1 < micro) {
          EXPECT_THROW(r.reduced(0), UsageError) << "accumulated, not reduced";
          r.finish_step();
          EXPECT_EQ(r.accumulated(), k + 1);
        }
      }
      // The average across ranks of the sum over micro-batches k = 0, 1, 2:
      // (rank + 1)(i + 1)(1 + 2 + 3) + 3 (step + j), averaged over ranks.
      for (int i = 0; i < n; ++i) {
        std::vector<float> got = r.reduced(i).to_vector<float>();
        for (std::size_t j = 0; j < got.size(); ++j) {
          const double want = (size + 1) / 2.0 * (i + 1) * 6 + 3.0 * (step + static_cast<double>(j));
          ASSERT_EQ(got[j], static_cast<float>(want)) << "param " << i << " element " << j << " " << r.describe();
        }
      }
      r.finish_step();
      EXPECT_EQ(r.accumulated(), 0);
    }
  }
}

TEST(Reducer, NoSyncMicroBatchesPushNoCollective) {
  if (world().size() == 1) GTEST_SKIP() << "one rank pushes no collective at all (OneRankPushesNothing); run on 2 or 3 ranks";
  Engine& e = current_engine();
  auto comm_ops = [&e] {
    e.wait_all();
    for (const StreamStat& s : e.stats().streams)
      if (s.name == "cpu:0/comm") return s.ops;
    return std::uint64_t{0};
  };
  auto p = params_of({7, 1, 33, 20, 5, 64});
  const int n = static_cast<int>(p.size());
  GradientReducer r(world(), p, {.bucket_mb = 100 / kMiB});
  ASSERT_GT(r.buckets().size(), 2u) << r.describe();
  auto micro_batch = [&](int k) {
    for (int i = n - 1; i >= 0; --i) r.push_gradient(i, micro_gradient(p[static_cast<std::size_t>(i)], i, k, 0));
  };
  // A step without accumulation: what one reduction costs on the comm stream.
  const std::uint64_t c0 = comm_ops();
  micro_batch(0);
  r.finish_step();
  const std::uint64_t per_reduction = comm_ops() - c0;
  ASSERT_GE(per_reduction, r.buckets().size()) << "an all-reduce per bucket at least";

  e.set_tracing(true);
  const std::uint64_t begin = e.pushed();
  const std::uint64_t c1 = comm_ops();
  for (int k = 0; k < 3; ++k) {
    GradientReducer::NoSync local(r);
    micro_batch(k);
    r.finish_step();
  }
  const std::uint64_t during = comm_ops() - c1;
  const std::uint64_t end = e.pushed();
  micro_batch(3);
  for (int i = 0; i < n; ++i) r.reduced(i).wait_to_read();
  r.finish_step();
  EXPECT_EQ(during, 0u) << "micro-batches under NoSync ran ops on the comm stream";
  EXPECT_EQ(comm_ops() - c1, per_reduction) << "the micro-batch after them reduces once, as a plain step does";
  e.set_tracing(false);
  // By name on the timeline: all-reduces pushed under NoSync, and after.
  std::size_t under = 0, after = 0;
  for (const TraceEvent& ev : e.take_trace())
    if (ev.push_index >= begin && std::string(ev.op) == "all_reduce") ++(ev.push_index < end ? under : after);
  EXPECT_EQ(under, 0u) << "no all-reduce pushed under NoSync";
  EXPECT_EQ(after, r.buckets().size()) << "one per bucket in the micro-batch that reduces";
}

TEST(Reducer, NoSyncMisuseIsAClearError) {
  auto p = params_of({4, 4});
  GradientReducer r(world(), p, {.bucket_mb = 25});
  // A guard made in the middle of a micro-batch.
  r.push_gradient(1, ones(Shape{4}));
  {
    auto local = r.no_sync();
    EXPECT_THROW(r.push_gradient(0, ones(Shape{4})), UsageError);
  }
  r.push_gradient(0, ones(Shape{4}));
  r.finish_step();
  // A micro-batch under NoSync with a gradient missing: the sums so far
  // are dropped, and the next step reduces its own gradients only.
  {
    auto local = r.no_sync();
    r.push_gradient(1, full(Shape{4}, 5.0));
    r.push_gradient(0, full(Shape{4}, 5.0));
    r.finish_step();
    r.push_gradient(1, full(Shape{4}, 7.0));
    try {
      r.finish_step();
      FAIL() << "finish_step with a gradient missing must throw";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("accumulated so far are dropped"), std::string::npos) << e.what();
    }
    EXPECT_EQ(r.accumulated(), 0);
  }
  r.push_gradient(1, ones(Shape{4}));
  r.push_gradient(0, ones(Shape{4}));
  EXPECT_EQ(r.reduced(0).to_vector<float>(), std::vector<float>(4, 1.0f));
  EXPECT_EQ(r.reduced(1).to_vector<float>(), std::vector<float>(4, 1.0f));
  r.finish_step();
}

TEST(Reducer, MisuseIsAClearError) {
  auto p = params_of({4, 4});
  GradientReducer r(world(), p, {.bucket_mb = 25});
  EXPECT_THROW(r.reduced(0), UsageError);
  EXPECT_THROW(r.push_gradient(2, zeros(Shape{4})), UsageError);
  EXPECT_THROW(r.push_gradient(1, zeros(Shape{5})), ShapeError);
  EXPECT_THROW(r.push_gradient(1, zeros(Shape{4}, {DType::f64})), DTypeError);
  r.push_gradient(1, zeros(Shape{4}));
  EXPECT_THROW(r.push_gradient(1, zeros(Shape{4})), UsageError);
  try {
    r.finish_step();
    FAIL() << "finish_step with a gradient missing must throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("parameters 0"), std::string::npos) << e.what();
  }
  // The reducer is usable again after the failed step.
  r.push_gradient(1, ones(Shape{4}));
  r.push_gradient(0, ones(Shape{4}));
  EXPECT_EQ(r.reduced(0).to_vector<float>(), std::vector<float>(4, 1.0f));
  r.finish_step();

  EXPECT_THROW(GradientReducer(world(), params_of({4}), {.bucket_mb = 0}), ValueError);
  EXPECT_THROW(GradientReducer(world(), {}, {}), ValueError);
  std::vector<Tensor> mixed{zeros(Shape{2}), zeros(Shape{2}, {DType::f64})};
  EXPECT_THROW(GradientReducer(world(), mixed, {}), DTypeError);
  std::vector<Tensor> ints{zeros(Shape{2}, {DType::i32})};
  EXPECT_THROW(GradientReducer(world(), ints, {}), DTypeError);
}

// A gradient whose op failed poisons its whole bucket: the packs after the
// first chunk must not wash the poison out of the flat buffer.
TEST(Reducer, AFailedGradientPoisonsItsBucket) {
  if (world().size() == 1) GTEST_SKIP() << "one rank packs no bucket (OneRankPushesNothing); run on 2 or 3 ranks";
  auto p = params_of({2, 2, 2, 2, 2});  // one bucket, packed in two ops
  GradientReducer r(world(), p, {.bucket_mb = 25});
  ASSERT_EQ(r.buckets().size(), 1u);
  for (int i = 4; i >= 0; --i) {
    if (i == 4) {
      Tensor bad = Tensor::empty(Shape{2}, DType::f32);
      OpDesc op;
      op.name = "failing_gradient";
      op.device = cpu(0);
      op.fn = [](const OpContext&) { throw std::runtime_error("gradient kernel failed"); };
      op.writes.add(bad.storage());
      current_engine().push(std::move(op));
      r.push_gradient(i, bad);
    } else {
      r.push_gradient(i, ones(Shape{2}));
    }
  }
  for (int i : {4, 0}) {
    try {
      r.reduced(i).to_vector<float>();
      ADD_FAILURE() << "reduced gradient " << i << " must carry the failure";
    } catch (const BackendError& e) {
      EXPECT_NE(std::string(e.what()).find("gradient kernel failed"), std::string::npos) << e.what();
    }
  }
  r.finish_step();
  // Later collectives still pair up across ranks (the failed op was local).
  EXPECT_FALSE(world().broken());
  current_engine().wait_all();
}

TEST(Reducer, OneRankPushesNothing) {
  // On one rank every reduction (sum, average, max, ...) of a gradient is
  // the gradient: the reducer hands it on as is, with no copy and no op.
  if (world().size() != 1) GTEST_SKIP() << "a one-rank property";
  auto p = params_of({2, 3, 4});
  GradientReducer r(world(), p, {.bucket_mb = 25});
  ASSERT_EQ(r.buckets().size(), 1u);
  std::vector<Tensor> grads;
  for (int i = 0; i < 3; ++i) grads.push_back(full(Shape{i + 2}, 1.5 + i));
  current_engine().wait_all();
  const std::uint64_t before = current_engine().pushed();
  for (int i = 2; i >= 0; --i) r.push_gradient(i, grads[static_cast<std::size_t>(i)]);
  EXPECT_EQ(current_engine().pushed(), before);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r.reduced(i).storage(), grads[static_cast<std::size_t>(i)].storage());
    EXPECT_EQ(r.reduced(i).to_vector<float>(), std::vector<float>(static_cast<std::size_t>(i + 2), 1.5f + i));
  }
  r.finish_step();
}

TEST(Reducer, DifferentLayoutsOnDifferentRanksAreRefused) {
  if (world().size() < 2) GTEST_SKIP() << "needs at least 2 ranks";
  auto p = params_of({1000, 1000, 1000});
  const double cap = world().rank() == 1 ? 4000 / kMiB : 25.0;
  try {
    GradientReducer r(world(), p, {.bucket_mb = cap});
    FAIL() << "every rank must see the mismatch";
  } catch (const CommError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("bucket layout differs"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 1 has 3 parameters (f32) in 3 buckets"), std::string::npos) << m;
  }
  EXPECT_FALSE(world().broken()) << "a refused layout leaves the communicator usable";
}

// A backward of three layers written out: the reducer must push the first
// bucket's all-reduce before the layers below are computed, and the engine's
// timeline must show it starting before the last backward op ends.
TEST(Reducer, FirstBucketReducesWhileBackwardComputes) {
  if (world().size() == 1) GTEST_SKIP() << "one rank reduces nothing (OneRankPushesNothing); run on 2 or 3 ranks";
  Engine& e = current_engine();
  const std::int64_t n = 256;
  std::vector<Tensor> w{randn(Shape{n, n}), randn(Shape{n, n}), randn(Shape{n, n})};
  GradientReducer r(world(), w, {.bucket_mb = 0.1});  // one bucket per 256 KiB gradient
  ASSERT_EQ(r.buckets().size(), 3u);
  Tensor x = randn(Shape{n, n});
  e.wait_all();
  e.set_tracing(true);
  const std::uint64_t begin = e.pushed();
  Tensor d = randn(Shape{n, n});
  auto comm_ops = [&e] {
    for (const StreamStat& s : e.stats().streams)
      if (s.name == "cpu:0/comm") return s.ops;
    return std::uint64_t{0};
  };
  const std::uint64_t comm_before = comm_ops();
  for (int l = 2; l >= 0; --l) {
    r.push_gradient(l, matmul(d, x, true, false));
    // The rest of backward below this layer: a few matmuls of work.
    for (int k = 0; k < 4; ++k) d = matmul(d, w[static_cast<std::size_t>(l)]);
  }
  // The last backward op is a latch: it ends only once a comm-stream op has
  // run, which it can only if the reducer pushed a bucket before it. So the
  // timeline below does not depend on how the threads are scheduled.
  std::atomic<bool> saw_comm{false};
  {
    OpDesc tail;
    tail.name = "backward_tail";
    tail.device = cpu(0);
    tail.stream = static_cast<int>(StreamKind::compute);
    tail.fn = [&](const OpContext&) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (comm_ops() == comm_before && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      saw_comm = comm_ops() > comm_before;
    };
    e.push(std::move(tail));
  }
  const std::uint64_t end = e.pushed();
  for (int l = 0; l < 3; ++l) r.reduced(l).wait_to_read();
  r.finish_step();
  e.wait_all();
  e.set_tracing(false);
  std::vector<TraceEvent> t = e.take_trace();

  std::uint64_t first_comm_push = UINT64_MAX, last_compute_push = 0;
  std::int64_t first_comm_start = INT64_MAX, last_compute_end = 0;
  for (const TraceEvent& ev : t) {
    if (ev.push_index < begin || ev.push_index >= end) continue;
    if (ev.stream % kStreamKinds == static_cast<int>(StreamKind::comm)) {
      first_comm_push = std::min(first_comm_push, ev.push_index);
      first_comm_start = std::min(first_comm_start, ev.start_ns);
    } else {
      last_compute_push = std::max(last_compute_push, ev.push_index);
      last_compute_end = std::max(last_compute_end, ev.end_ns);
    }
  }
  EXPECT_TRUE(saw_comm) << "no bucket ran on the comm stream while backward was still computing";
  ASSERT_NE(first_comm_push, UINT64_MAX) << "no reduction on the comm stream";
  EXPECT_LT(first_comm_push, last_compute_push) << "the first bucket must be pushed before backward ends";
  EXPECT_LT(first_comm_start, last_compute_end) << "the first bucket must start before backward ends";
}

}  // namespace
}  // namespace tide::test

namespace tide::test {
namespace {

TEST(DataParallel, GradientsAreAveragedDuringBackwardAndNoSyncSums) {
  Communicator& w = world();
  const double r = w.rank() + 1.0, n = w.size();
  // Different values per rank: DataParallel starts every rank from rank 0's.
  std::vector<Tensor> params{full(Shape{3}, r), full(Shape{2, 2}, r)};
  EXPECT_THROW(DataParallel(w, params), UsageError);  // not marked yet
  for (Tensor& p : params) p.set_requires_grad();
  DataParallel ddp(w, params, {.first_bucket_mb = 0.00001});
  EXPECT_EQ(params[0].to_vector<float>(), std::vector<float>(3, 1.0f));
  EXPECT_TRUE(params[0].requires_grad());
  // loss = (rank + 1) * (sum(p0) + sum(p1)): each gradient is rank + 1 on
  // its rank, so the average is (n + 1) / 2.
  auto loss = [&] { return mul(add(sum(params[0]), sum(params[1])), r); };
  backward(loss());
  const float avg = static_cast<float>((n + 1) / 2);
  EXPECT_EQ(params[0].grad().to_vector<float>(), std::vector<float>(3, avg));
  EXPECT_EQ(params[1].grad().to_vector<float>(), std::vector<float>(4, avg));
  // Two micro-batches summed on each rank, the third reduces all three.
  for (Tensor& p : params) p.set_grad(Tensor());
  {
    auto local = ddp.no_sync();
    backward(loss());
    backward(loss());
  }
  backward(loss());
  EXPECT_EQ(params[1].grad().to_vector<float>(), std::vector<float>(4, 3 * avg));
  EXPECT_THROW(DataParallel(w, {}), UsageError);
}

}  // namespace
}  // namespace tide::test
