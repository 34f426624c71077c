// A collective that one rank never joins: the others must fail with an error
// naming it, within TIDE_COMM_TIMEOUT, instead of hanging. Rank 0 checks the
// error and prints a line the test looks for; its runtime then ends the job
// with MPI_Abort (the collective cannot be cancelled), so mpirun exits non-zero.
#include <cstdio>
#include <string>

#include <tide/tide.h>

int main(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);
  if (rt->size() < 2) {
    std::printf("needs at least 2 ranks\n");
    return 1;
  }
  if (rt->rank() != 0) return 0;  // never joins
  tide::Tensor t = tide::ones({16});
  rt->world().all_reduce_(t);
  try {
    t.wait_to_read();
    std::printf("tide-timeout-test: FAILED (no error)\n");
  } catch (const tide::BackendError& e) {
    const std::string msg = e.what();
    bool ok = msg.find("all_reduce #0") != std::string::npos && msg.find("timed out") != std::string::npos &&
              msg.find(std::to_string(rt->size()) + " ranks") != std::string::npos;
    std::printf("%s\ntide-timeout-test: %s\n", msg.c_str(), ok ? "OK" : "FAILED (message)");
  }
  std::fflush(stdout);
  return 0;
}
