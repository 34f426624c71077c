// The engine on a GPU: devices and stream names, copies through the pinned
// staging path, ordering between GPU streams (events) and between a GPU and
// the host, errors, and device memory going back to its baseline. Tests that
// need a GPU skip without one; the device-list checks run everywhere.
#include <cstdint>
#include <cstdlib>
#include <latch>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#if TIDE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include <tide/core/copy.h>
#include <tide/ops/creation.h>
#include <tide/ops/elementwise.h>

#include "../gpu_test_util.h"
#include "test_util.h"

namespace tide::test {
namespace {

TEST(CudaDevices, AskingForMoreGpusThanThereAreThrows) {
  EngineOptions o;
  o.cuda_devices = cuda_device_count() + 1;
  try {
    Engine::create(o);
    FAIL() << "an engine with more GPUs than the process has was created";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA device"), std::string::npos) << e.what();
  }
  o.cuda_devices = -2;
  EXPECT_THROW(Engine::create(o), ValueError);
}

// TIDE_CUDA_WAIT_POLL_US is read as each GPU stream is made: a value that
// is not a whole number of microseconds stops the engine being made.
TEST(CudaDevices, ABadWaitPollIsRefusedWhenTheEngineIsMade) {
  TIDE_REQUIRE_GPU();
  EngineOptions o;
  o.cuda_devices = 1;
  {
    // Set for this block only, whatever it throws; the caller's value comes back.
    struct Env {
      std::optional<std::string> old;
      Env() {
        if (const char* v = std::getenv("TIDE_CUDA_WAIT_POLL_US")) old = v;
        ::setenv("TIDE_CUDA_WAIT_POLL_US", "soon", 1);
      }
      ~Env() {
        if (old) ::setenv("TIDE_CUDA_WAIT_POLL_US", old->c_str(), 1);
        else ::unsetenv("TIDE_CUDA_WAIT_POLL_US");
      }
    } env;
    try {
      Engine::create(o);
      ADD_FAILURE() << "an engine was made with TIDE_CUDA_WAIT_POLL_US=soon";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("TIDE_CUDA_WAIT_POLL_US=soon"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(Engine::create(o));
}

TEST(CudaDevices, GpusComeAfterCpuDevices) {
  EngineOptions o;
  o.cpu_devices = 2;
  o.cuda_devices = -1;  // all of them: none on a machine without a GPU
  auto e = Engine::create(o);
  ASSERT_EQ(e->devices().size(), static_cast<std::size_t>(2 + cuda_device_count()));
  EXPECT_EQ(e->devices()[1], cpu(1));
  for (int i = 0; i < cuda_device_count(); ++i) {
    EXPECT_EQ(e->devices()[static_cast<std::size_t>(2 + i)], cuda(i));
    EXPECT_EQ(e->stream_name((2 + i) * kStreamKinds + 2), cuda(i).str() + "/comm");
  }
  EXPECT_THROW(e->allocate(cuda(cuda_device_count()), 8), DeviceError);
  EXPECT_THROW(cuda_memory_in_use(cuda_device_count()), DeviceError);
}

TEST(CudaDevices, CopyDeviceIsTheGpuSide) {
  EXPECT_EQ(copy_device(cuda(0), cpu(0)), cuda(0));  // host to GPU: the destination
  EXPECT_EQ(copy_device(cpu(0), cuda(1)), cuda(1));  // GPU to host: the source
  EXPECT_EQ(copy_device(cuda(0), cuda(1)), cuda(1));
  EXPECT_EQ(copy_device(cpu(1), cpu(0)), cpu(1));
}

class CudaEngine : public ::testing::TestWithParam<EngineKind> {};

TEST_P(CudaEngine, CopiesRoundTripExactlyAtEverySize) {
  TIDE_REQUIRE_GPU();
  EngineFixture e(GetParam(), 1, {}, 1);
  // 0, one element, and sizes around and past the 4 MiB staging chunks.
  for (std::int64_t n : {0L, 1L, 1000L, (1L << 20) - 1, (3L << 20) + 5}) {
    std::vector<float> host(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) host[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.5f - 7.0f;
    Tensor h = from_vector(host, {n});
    Tensor g = copy_to(h, cuda(0));
    Tensor g2 = Tensor::empty({n}, DType::f32, cuda(0));
    copy_(g2, g);  // on the GPU
    EXPECT_EQ(copy_to(g2, cpu(0)).to_vector<float>(), host) << n << " elements";
    EXPECT_EQ(g.to_vector<float>(), host) << n << " elements, read straight from the GPU";
  }
}

TEST_P(CudaEngine, ComputeThenCopyStreamSeesEveryWrite) {
  TIDE_REQUIRE_GPU();
  EngineFixture e(GetParam(), 1, {}, 1);
  const std::int64_t n = 1 << 22;  // big enough that 100 adds take a while
  Tensor x = zeros({n}, {DType::f32, cuda(0)});
  for (int i = 0; i < 100; ++i) add_(x, 1.0);
  Tensor host;
  {
    StreamScope copy(StreamKind::copy, *e);
    host = copy_to(x, cpu(0));  // RAW across streams: an event wait
  }
  add_(x, 1.0);  // WAR: must not overtake the copy
  std::vector<float> v = host.to_vector<float>();
  EXPECT_EQ(v.front(), 100.0f);
  EXPECT_EQ(v.back(), 100.0f);
  EXPECT_EQ(x.to_vector<float>().back(), 101.0f);
}

TEST_P(CudaEngine, BarrierWaitsOnlyForItsProducer) {
  TIDE_REQUIRE_GPU();
  if (GetParam() == EngineKind::naive) GTEST_SKIP() << "the naive engine runs each op before the next push";
  EngineFixture e(GetParam(), 1, {}, 1);
  std::latch hold(1);
  auto blocked = buffer(*e, cuda(0));
  // The copy stream's worker is held on the host; the compute stream is free.
  push(*e, "held", cuda(0), StreamKind::copy, {}, {blocked}, [&](const OpContext&) { hold.wait(); });
  Tensor y = full({1000}, 3.0, {DType::f32, cuda(0)});
  EXPECT_EQ(y.to_vector<float>().back(), 3.0f);
  hold.count_down();
  e->wait_all();
}

// An op that is not launch-only may block on the host (this one until the
// frontend has read a value the stream made just before it). The ops
// launched before it must get their completion event first, or the read
// would wait for the blocked op and the blocked op for the read.
TEST_P(CudaEngine, AnOpBlockedOnTheHostDoesNotHoldBackTheOpsBeforeIt) {
  TIDE_REQUIRE_GPU();
  if (GetParam() == EngineKind::naive) GTEST_SKIP() << "the naive engine runs each op before the next push";
  EngineFixture e(GetParam(), 1, {}, 1);
  std::latch hold(1);
  Tensor w;
  {
    StreamScope copy(StreamKind::copy, *e);
    w = full({1000}, 5.0, {DType::f32, cuda(0)});
  }
  auto blocked = buffer(*e, cuda(0));
  push(*e, "held", cuda(0), StreamKind::copy, {}, {blocked}, [&](const OpContext&) { hold.wait(); });
  EXPECT_EQ(w.to_vector<float>().back(), 5.0f);
  hold.count_down();
  e->wait_all();
}

// SyncPolicy::max_unlaunched_gpu_ops: the compute stream's worker is held
// on the host, so nothing after the held op is launched; the frontend must
// stop at the cap (a helper releases the worker once it sees the stall, or
// the test would hang), and every op still runs, in order.
TEST_P(CudaEngine, TheFrontendStopsAtAGpuStreamsUnlaunchedOpsCap) {
  TIDE_REQUIRE_GPU();
  if (GetParam() == EngineKind::naive) GTEST_SKIP() << "the naive engine runs each op before the next push";
  SyncPolicy p;
  p.max_unlaunched_gpu_ops = 64;
  EngineFixture e(GetParam(), 1, p, 1);
  Tensor x = zeros({2}, {DType::f32, cuda(0)});
  auto blocked = buffer(*e, cuda(0));
  e->wait_all();
  const std::uint64_t before = e->stats().ops_pushed;
  std::latch hold(1);
  push(*e, "held", cuda(0), StreamKind::compute, {}, {blocked}, [&](const OpContext&) { hold.wait(); });
  std::uint64_t pushed_at_stall = 0;
  std::thread releaser([&] {
    for (int i = 0; i < 10'000'000 && !e->stats().stalling; ++i) std::this_thread::yield();
    pushed_at_stall = e->stats().ops_pushed;
    hold.count_down();
  });
  for (int i = 0; i < 500; ++i) add_(x, 1.0);
  releaser.join();
  EXPECT_EQ(x.to_vector<float>().back(), 500.0f);
  EXPECT_EQ(pushed_at_stall - before, 64u) << "the held op and 63 adds, then the stall";
  const Stats s = e->stats();
  EXPECT_GE(s.stalls_ops, 1u);
  EXPECT_GT(s.stalled_ns, 0);
  e->wait_all();
}

TEST_P(CudaEngine, AFailingGpuOpIsReportedWithItsStream) {
  TIDE_REQUIRE_GPU();
  EngineFixture e(GetParam(), 1, {}, 1);
  auto x = buffer(*e, cuda(0));
  push(*e, "bad_gpu_op", cuda(0), StreamKind::compute, {}, {x},
       [](const OpContext&) { throw ValueError("refused on the GPU"); });
  Tensor t(x, {1}, DType::f32);
  try {
    t.wait_to_read();
    FAIL() << "no error";
  } catch (const BackendError& err) {
    EXPECT_EQ(err.provenance().op, "bad_gpu_op");
    EXPECT_EQ(err.provenance().stream, "cuda:0/compute");
  }
  // The engine and the device stay usable.
  EXPECT_EQ(full({4}, 2.0, {DType::f32, cuda(0)}).to_vector<float>().back(), 2.0f);
}

TEST_P(CudaEngine, DeviceMemoryReturnsToItsBaseline) {
  TIDE_REQUIRE_GPU();
  EngineFixture e(GetParam(), 1, {}, 1);
  e->wait_all();
  const std::uint64_t before = cuda_memory_in_use(0);
  {
    Tensor x = ones({4096}, {DType::f32, cuda(0)});
    for (int i = 0; i < 10000; ++i) x = add(x, 1.0);  // each op allocates its output
    EXPECT_EQ(x.to_vector<float>().back(), 10001.0f);
  }
  e->wait_all();  // finished ops are reclaimed, and with them the storages
  EXPECT_EQ(cuda_memory_in_use(0), before);
}

#if TIDE_HAVE_CUDA
// Kernels' scratch memory comes from the device's default pool, whose
// release threshold is 0 unless set: every synchronize would give a freed
// block back to the driver and the next cudaMallocAsync would map memory
// afresh. tide keeps it (no TIDE_CUDA_POOL_KEEP_MB: everything) until
// empty_cuda_cache trims the pool.
TEST_P(CudaEngine, TheScratchPoolKeepsFreedMemoryUntilTheCacheIsEmptied) {
  TIDE_REQUIRE_GPU();
  if (const char* keep = std::getenv("TIDE_CUDA_POOL_KEEP_MB"); keep && *keep)
    GTEST_SKIP() << "TIDE_CUDA_POOL_KEEP_MB is set: the threshold is its value";
  EngineFixture e(GetParam(), 1, {}, 1);
  EXPECT_EQ(ones({4}, {DType::f32, cuda(0)}).to_vector<float>().front(), 1.0f);  // the device is set up
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaDeviceGetMemPool(&pool, 0), cudaSuccess);
  std::uint64_t threshold = 0;
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), cudaSuccess);
  EXPECT_EQ(threshold, std::numeric_limits<std::uint64_t>::max());
  int internal_dependencies = 1;  // a stream never waits for another's pending free
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &internal_dependencies),
            cudaSuccess);
  EXPECT_EQ(internal_dependencies, 0);

  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  const std::unique_ptr<CUstream_st, cudaError_t (*)(cudaStream_t)> own_s(s, cudaStreamDestroy);
  void* p = nullptr;
  ASSERT_EQ(cudaMallocAsync(&p, std::size_t{8} << 20, s), cudaSuccess);
  ASSERT_EQ(cudaFreeAsync(p, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);  // with a threshold of 0, the block would go back here
  std::uint64_t kept = 0;
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &kept), cudaSuccess);
  EXPECT_GE(kept, std::uint64_t{8} << 20);

  empty_cuda_cache(0);
  std::uint64_t after = 0;
  ASSERT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &after), cudaSuccess);
  EXPECT_LT(after, kept);  // the freed block went back to the driver
}
#endif

// 4 TiB is more than any GPU's pool can give: cudaErrorMemoryAllocation
// becomes an OutOfMemoryError naming the device and what it holds, nothing
// is pushed, and the device stays usable.
TEST_P(CudaEngine, AnImpossibleAllocationIsAnOutOfMemoryError) {
  TIDE_REQUIRE_GPU();
  EngineFixture e(GetParam(), 1, {}, 1);
  Tensor held = ones({1024}, {DType::f32, cuda(0)});
  const std::uint64_t pushed = e->stats().ops_pushed;
  try {
    Tensor::empty({std::int64_t{1} << 20, std::int64_t{1} << 20}, DType::f32, cuda(0));
    FAIL() << "no error";
  } catch (const OutOfMemoryError& err) {
    EXPECT_EQ(err.device(), cuda(0));
    EXPECT_EQ(err.requested_bytes(), std::uint64_t{1} << 42);
    EXPECT_GE(err.in_use_bytes(), 4096u);
    const std::string what = err.what();
    EXPECT_NE(what.find("out of memory on cuda:0"), std::string::npos) << what;
    EXPECT_NE(what.find("4398046511104 bytes"), std::string::npos) << what;
  }
  EXPECT_EQ(e->stats().ops_pushed, pushed);
  EXPECT_EQ(add(held, 1.0).to_vector<float>().front(), 2.0f);
}

TEST_P(CudaEngine, ShutdownWithQueuedGpuWorkDoesNotHang) {
  TIDE_REQUIRE_GPU();
  EngineFixture e(GetParam(), 1, {}, 1);
  Tensor x = zeros({1 << 20}, {DType::f32, cuda(0)});
  for (int i = 0; i < 2000; ++i) add_(x, 1.0);  // more than the event ring holds
  e.scope.reset();
  e.engine.reset();  // drains the streams, then joins the workers
}

// A GPU stream records an event after a run of ops, not after each one
// (Stream::cover). Bursts longer than a run and than the event ring, with
// readers on another stream and blockers in the middle of a burst, must see
// every value in order and never stall; and a ping-pong in which each op
// waits for the other stream's latest op must not deadlock.
TEST_P(CudaEngine, EventsAfterRunsOfOpsKeepEveryOrder) {
  TIDE_REQUIRE_GPU();
  EngineFixture e(GetParam(), 1, {}, 1);
  const TensorOptions on_gpu{DType::f32, cuda(0)};
  Tensor a = zeros({256}, on_gpu), b = zeros({256}, on_gpu);
  for (int i = 1; i <= 3000; ++i) {
    {
      StreamScope s(StreamKind::compute, *e);
      add_(a, 1.0);
    }
    if (i % 7 == 0) {  // a reader on the copy stream, mid-burst
      StreamScope s(StreamKind::copy, *e);
      copy_(b, a);
    }
    if (i % 500 == 0) {  // a blocker on a value in the middle of a long queue
      ASSERT_EQ(a.to_vector<float>().back(), static_cast<float>(i));
      ASSERT_EQ(b.to_vector<float>().front(), static_cast<float>(i - i % 7));
    }
  }
  Tensor x = full({64}, 1.0, on_gpu), y = zeros({64}, on_gpu);
  for (int i = 0; i < 500; ++i) {
    StreamScope s(i % 2 ? StreamKind::compute : StreamKind::copy, *e);
    y = add(x, 1.0);  // reads the other stream's last output
    std::swap(x, y);
  }
  EXPECT_EQ(x.to_vector<float>().front(), 501.0f);
  e->wait_all();
}

INSTANTIATE_TEST_SUITE_P(Engines, CudaEngine, ::testing::Values(EngineKind::async, EngineKind::naive),
                         [](const auto& info) { return std::string(engine_kind_name(info.param)); });

}  // namespace
}  // namespace tide::test
