// The watchdog of blocking MPI calls (comm/src/watchdog.h): past its
// deadline it prints why and ends the process; disarmed in time, nothing.
// Death tests fork, and a forked rank calling MPI_Abort would end the whole
// job: they run only in the world of one rank that needs no MPI.
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "mpi_test.h"
#include "mpi/watchdog.h"

namespace tide::test {
namespace {

using detail::BlockingDeadline;
using clock = BlockingDeadline::clock;

TEST(Watchdog, EndsTheProcessAtTheDeadlineSayingWhy) {
  if (world().uses_mpi()) GTEST_SKIP() << "a forked rank would end the whole job: run without mpirun";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const auto start = clock::now();
        BlockingDeadline d(3, start + std::chrono::milliseconds(200), [start] {
          const auto late = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - start).count();
          return "a stuck call, noticed after " + std::to_string(late) + " ms";
        });
        std::this_thread::sleep_for(std::chrono::seconds(10));  // the stuck call
      },
      ::testing::ExitedWithCode(1),
      "tide: rank 3: a stuck call, noticed after (19[0-9]|2[0-9][0-9]) ms\ntide: rank 3: ending the job");
}

TEST(Watchdog, ACallThatReturnsInTimeIsLeftAlone) {
  // Many short calls, each armed with a deadline well past its end, then a
  // wait past all of them: the process is still here.
  for (int i = 0; i < 1000; ++i) {
    BlockingDeadline d(0, clock::now() + std::chrono::milliseconds(50), [] { return std::string("must not fire"); });
  }
  {
    BlockingDeadline d(0, clock::now() + std::chrono::milliseconds(100), [] { return std::string("must not fire"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  SUCCEED() << "no deadline fired";
}

}  // namespace
}  // namespace tide::test
