// main() for multi-rank GoogleTest programs: every rank runs every test
// (collectives inside a test pair up across ranks); only rank 0 prints; the
// number of ranks with a failure is summed and rank 0 reports it.
#include <cstdio>

#include <gtest/gtest.h>
#include <tide/tide.h>

#include "mpi_test.h"

namespace tide::test {
Runtime* g_runtime = nullptr;
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto rt = tide::Runtime::init(argc, argv);
  tide::test::g_runtime = rt.get();
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rt->rank() != 0) delete listeners.Release(listeners.default_result_printer());

  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  tide::Tensor f = tide::from_vector(std::vector<std::int32_t>{failed});
  rt->world().all_reduce_(f);
  int failed_ranks = f.item<std::int32_t>();
  if (rt->rank() == 0)
    std::printf("%d of %d ranks had failures\n", failed_ranks, rt->size());
  return failed_ranks ? 1 : 0;
}
