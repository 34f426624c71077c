// Compute proceeds while an all-reduce is in flight. Shown by construction,
// not by timing: rank 0's all-reduce cannot complete until rank 1 joins, and
// rank 1 joins only after rank 0's compute op has run (it signals through a
// file: the ranks share this machine's filesystem). If rank 0's compute
// stream waited for its comm stream, rank 1 would never join and the
// collective would time out.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "mpi_test.h"

namespace tide::test {
namespace {

void push_raw(const char* name, StreamKind stream, StorageList reads, StorageList writes,
              std::function<void()> fn) {
  OpDesc op;
  op.name = name;
  op.device = cpu(0);
  op.stream = static_cast<int>(stream);
  op.reads = std::move(reads);
  op.writes = std::move(writes);
  op.fn = [f = std::make_shared<std::function<void()>>(std::move(fn))](const OpContext&) { (*f)(); };
  current_engine().push(std::move(op));
}

TEST(Overlap, ComputeRunsWhileAnAllReduceIsInFlight) {
  if (world().size() < 2) GTEST_SKIP() << "needs at least 2 ranks";
  // A name for the signal file that every rank agrees on.
  Tensor token = from_vector(std::vector<std::int32_t>{static_cast<std::int32_t>(std::random_device{}() & 0x7fffffff)});
  world().broadcast_(token, 0);
  const std::filesystem::path signal =
      std::filesystem::temp_directory_path() / ("tide-overlap-" + std::to_string(token.item<std::int32_t>()));

  Tensor a = full({4096}, 1.0);
  auto reduce_done = std::make_shared<std::atomic<bool>>(false);
  auto compute_saw_reduce_done = std::make_shared<std::atomic<int>>(-1);
  Tensor marker = zeros({1});
  if (world().rank() == 1) {
    // Rank 1's comm stream joins only once rank 0's compute op has run.
    push_raw("wait_for_signal", StreamKind::comm, {}, {}, [signal] {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!std::filesystem::exists(signal)) {
        if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("rank 0's compute op never ran");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  world().all_reduce_(a);
  push_raw("after_reduce", StreamKind::comm, {a.storage()}, {}, [reduce_done] { *reduce_done = true; });
  if (world().rank() == 0) {
    push_raw("compute", StreamKind::compute, {}, {marker.storage()}, [=] {
      *compute_saw_reduce_done = reduce_done->load() ? 1 : 0;
      std::FILE* f = std::fopen(signal.c_str(), "w");
      if (f) std::fclose(f);
    });
  }
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(4096, static_cast<float>(world().size())));
  rt().wait_all();
  if (world().rank() == 0) {
    EXPECT_EQ(compute_saw_reduce_done->load(), 0) << "the compute op ran only after the all-reduce";
    std::filesystem::remove(signal);
  }
}

}  // namespace
}  // namespace tide::test
