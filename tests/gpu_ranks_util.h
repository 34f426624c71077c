// Shared by multi-rank GPU tests: whether every rank can run collectives on
// its GPU. A test must skip on all ranks or on none, or the collectives of
// the ranks that go on would wait for the ones that skipped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "comm/mpi_test.h"

namespace tide::test {

/// Why this rank cannot run NCCL collectives on its GPU ("" if it can).
inline std::string nccl_unusable_here() {
  if (!cuda_built()) return "tide was built without the CUDA backend";
  if (cuda_device_count() == 0) return "no CUDA device here";
  if (!Communicator::nccl_built()) return "tide was built without NCCL";
  if (!rt().device().is_cuda()) return "the runtime gave this rank " + rt().device().str();
  return "";
}

/// The same answer on every rank: why some rank cannot ("" if all can).
inline std::string nccl_unusable_anywhere() {
  std::string why = nccl_unusable_here();
  Tensor ok = from_vector(std::vector<std::int32_t>{why.empty() ? 1 : 0});
  world().all_reduce_(ok, ReduceOp::min);
  if (ok.item<std::int32_t>() == 1) return "";
  return why.empty() ? "another rank cannot use NCCL" : why;
}

}  // namespace tide::test

#define TIDE_REQUIRE_NCCL_ON_EVERY_RANK()                                       \
  do {                                                                          \
    if (const std::string why = ::tide::test::nccl_unusable_anywhere(); !why.empty()) \
      GTEST_SKIP() << why;                                                      \
  } while (0)
