// A collective that some ranks never join: the others must fail with an
// error naming it and the ranks that did not arrive, within
// TIDE_COMM_TIMEOUT, instead of hanging. Rank 0 checks the error and prints
// a line the test looks for; its runtime then ends the job with MPI_Abort
// (the collective cannot be cancelled), so mpirun exits non-zero.
//
// 2 ranks: rank 1 returns from main at once (it answers no roll call).
// 3 ranks: all run all_reduce #0 and split #1 (rank 0 alone, ranks 1 and 2
// together); rank 0 then waits in the world's all_reduce #2, which ranks 1
// and 2 never join: rank 1 sleeps (in no collective, it cannot answer),
// rank 2 waits in its group's all_reduce #0 (with a longer timeout, so that
// rank 0 fails first) and answers from there.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <tide/tide.h>

namespace {

bool has(const std::string& msg, const std::string& part) {
  if (msg.find(part) != std::string::npos) return true;
  std::printf("missing from the message: \"%s\"\n", part.c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* r = std::getenv("OMPI_COMM_WORLD_RANK"); r && std::string(r) == "2")
    setenv("TIDE_COMM_TIMEOUT", "60", 1);
  auto rt = tide::Runtime::init(argc, argv);
  const int size = rt->size();
  if (size != 2 && size != 3) {
    std::printf("needs 2 or 3 ranks\n");
    return 1;
  }
  std::shared_ptr<tide::Communicator> group;
  if (size == 3) {
    tide::Tensor warm = tide::ones({4});
    rt->world().all_reduce_(warm);
    group = rt->world().split(rt->rank() == 0 ? 0 : 1, rt->rank());
  }
  if (rt->rank() == 1) {
    if (size == 3) std::this_thread::sleep_for(std::chrono::seconds(30));  // ended by rank 0's MPI_Abort
    return 0;  // never joins
  }
  tide::Tensor t = tide::ones({16});
  if (rt->rank() == 2) {
    group->all_reduce_(t);  // waits for rank 1 until rank 0 ends the job
    t.wait_to_read();
    return 0;
  }
  rt->world().all_reduce_(t);
  try {
    t.wait_to_read();
    std::printf("tide-timeout-test: FAILED (no error)\n");
  } catch (const tide::BackendError& e) {
    const std::string msg = e.what();
    std::printf("%s\n", msg.c_str());
    bool ok = has(msg, "timed out") && has(msg, std::to_string(size) + " ranks");
    if (size == 2) {
      ok = has(msg, "all_reduce #0") &&
           has(msg, "ranks that did not arrive: 1 (rank 1 did not answer: it is in no collective") && ok;
    } else {
      ok = has(msg, "all_reduce #2 (16 x f32, sum, 3 ranks)") && has(msg, "ranks that did not arrive: 1, 2 (") &&
           has(msg, "rank 1 did not answer: it is in no collective") &&
           has(msg, "rank 2 is waiting in all_reduce #0 (16 x f32, sum, another communicator of 2 ranks)") && ok;
    }
    std::printf("tide-timeout-test: %s\n", ok ? "OK" : "FAILED (message)");
  }
  std::fflush(stdout);
  return 0;
}
