// A rank killed (SIGKILL) while the others wait in an all-reduce: every
// survivor must say which collective it was in and that the rank vanished,
// and the job must end non-zero well within TIDE_COMM_TIMEOUT
// (tests/comm/expect_survivors.sh checks the output and the time).
//
//   kill_main large|small|idle
//
// All ranks run all_reduce #0, then every rank but rank 1 pushes
// all_reduce #1 (16 Mi floats for `large`, whose ranks wait in the polled
// arrival before MPI's blocking all-reduce; 16 floats for `small`, a
// non-blocking one) while rank 1 kills itself 300 ms later, so the
// survivors are inside #1 when it dies: their waits find its process gone.
// `idle`: the survivors compute (sleep) for 8 s instead, in no collective;
// mpirun ends them with SIGTERM, and each prints its report.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include <tide/tide.h>

int main(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);
  const bool large = argc > 1 && std::strcmp(argv[1], "large") == 0;
  if (rt->size() < 3) {
    std::printf("needs at least 3 ranks\n");
    return 1;
  }
  tide::Tensor warm = tide::ones({4});
  rt->world().all_reduce_(warm);
  warm.wait_to_read();
  if (rt->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::fflush(stdout);
    raise(SIGKILL);
  }
  if (std::strcmp(argc > 1 ? argv[1] : "", "idle") == 0) std::this_thread::sleep_for(std::chrono::seconds(8));
  tide::Tensor t = tide::ones({large ? std::int64_t{1} << 24 : 16});
  rt->world().all_reduce_(t);
  t.wait_to_read();  // throws on a survivor that saw rank 1 vanish; the Runtime then ends the job
  std::printf("rank %d finished normally\n", rt->rank());
  return 0;
}
