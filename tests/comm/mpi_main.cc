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

namespace {

/// On ranks other than 0, which print nothing else: each failed assertion
/// and failed test, prefixed with the rank, so a failure on one rank only
/// can be read from the job's output.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                 r.line_number(), r.message());
  }
  void OnTestEnd(const ::testing::TestInfo& t) override {
    if (t.result()->Failed())
      std::fprintf(stderr, "[rank %d] [  FAILED  ] %s.%s\n", rank_, t.test_suite_name(), t.name());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto rt = tide::Runtime::init(argc, argv);
  tide::test::g_runtime = rt.get();
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rt->rank() != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rt->rank()));
  }

  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  tide::Tensor f = tide::from_vector(std::vector<std::int32_t>{failed});
  rt->world().all_reduce_(f);
  int failed_ranks = f.item<std::int32_t>();
  if (rt->rank() == 0)
    std::printf("%d of %d ranks had failures\n", failed_ranks, rt->size());
  return failed_ranks ? 1 : 0;
}
