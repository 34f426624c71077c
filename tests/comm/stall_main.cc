// A peer that stops responding in the middle of a large all-reduce while
// its process still exists (SIGSTOP: no liveness signal can tell it from a
// slow peer). The collective is on the blocking path (every rank arrived,
// then MPI's blocking all-reduce), which no poll can interrupt: the other
// rank's watchdog must end the job at TIDE_COMM_TIMEOUT after the
// collective began, naming the collective, its size and the stopped rank.
//
// Both ranks push a long run of 64 MiB all-reduces; rank 1 stops its own
// process 300 ms in, while its comm thread is almost surely inside one of
// them (the arrival check before each takes microseconds, the transfer
// milliseconds). The test script checks the message and the time.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include <tide/tide.h>

int main(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);
  if (rt->size() != 2) {
    std::printf("needs 2 ranks\n");
    return 1;
  }
  constexpr std::int64_t kCount = std::int64_t{16} << 20;  // 64 MiB of f32
  tide::Tensor t = tide::ones({kCount});
  rt->world().all_reduce_(t);
  rt->wait_all();  // both ranks are in step before the stop
  std::printf("[rank %d] warmed up; pushing all-reduces\n", rt->rank());
  std::fflush(stdout);
  std::thread stopper;
  if (rt->rank() == 1) {
    stopper = std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::printf("[rank 1] stopping this process (SIGSTOP)\n");
      std::fflush(stdout);
      kill(getpid(), SIGSTOP);
    });
  }
  for (int i = 0; i < 1000; ++i) rt->world().all_reduce_(t);
  rt->wait_all();
  if (stopper.joinable()) stopper.join();
  std::printf("[rank %d] finished normally: the stop was not noticed\n", rt->rank());
  return 0;
}
