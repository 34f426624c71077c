// A rank killed (SIGKILL) while the others wait in an all-reduce: every
// survivor must say which collective it was in and that the rank vanished,
// and the job must end non-zero well within TIDE_COMM_TIMEOUT
// (tests/comm/expect_survivors.sh checks the output and the time).
//
//   kill_main large|small|idle|blocking
//
// All ranks run all_reduce #0, then every rank but rank 1 pushes
// all_reduce #1 (16 Mi floats for `large`, whose ranks wait in the polled
// arrival before MPI's blocking all-reduce; 16 floats for `small`, a
// non-blocking one) while rank 1 kills itself 300 ms later, so the
// survivors are inside #1 when it dies: their waits find its process gone.
// `idle`: the survivors compute (sleep) for 8 s instead, in no collective;
// mpirun ends them with SIGTERM, and each prints its report. `blocking`:
// rank 1 joins all_reduce #1 (32 Mi floats) too and kills itself 100 ms
// later, most likely inside MPI's blocking all-reduce, where only mpirun's
// SIGTERM ends the others (they print the report); a rank whose part
// finished first waits in no collective, and its report names #1 as the
// last one.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <tide/tide.h>

int main(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (rt->size() < 3) {
    std::printf("needs at least 3 ranks\n");
    return 1;
  }
  tide::Tensor warm = tide::ones({4});
  rt->world().all_reduce_(warm);
  warm.wait_to_read();
  if (mode == "blocking") {
    tide::Tensor big = tide::ones({std::int64_t{1} << 25});
    big.wait_to_read();
    rt->world().all_reduce_(big);
    if (rt->rank() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      raise(SIGKILL);
    }
    big.wait_to_read();
    // A rank whose part of the all-reduce completed before rank 1 died
    // stays out of collectives until mpirun ends it.
    std::this_thread::sleep_for(std::chrono::seconds(20));
    return 0;
  }
  if (rt->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    raise(SIGKILL);
  }
  if (mode == "idle") std::this_thread::sleep_for(std::chrono::seconds(8));
  tide::Tensor t = tide::ones({mode == "large" ? std::int64_t{1} << 24 : 16});
  rt->world().all_reduce_(t);
  t.wait_to_read();  // throws on a survivor that saw rank 1 vanish; the Runtime then ends the job
  std::printf("rank %d finished normally\n", rt->rank());
  return 0;
}
