// A collective of a group that one member never joins: the other must fail
// with an error naming the group's collective by the group's own sequence
// number, and the failure must break the world too, so that the Runtime ends
// the job with MPI_Abort (the pending collective cannot be cancelled). Run
// with 3 ranks: ranks 0 and 1 form a group, rank 2 is alone; rank 1 never
// joins. Rank 0 prints the line the test looks for; the error must name
// rank 1 (and its world rank) as the one that did not arrive.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <tide/tide.h>

int main(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);
  if (rt->size() != 3) {
    std::printf("needs 3 ranks\n");
    return 1;
  }
  tide::Tensor warm = tide::ones({4});
  rt->world().all_reduce_(warm);  // the world's #0, so the group's #0 is its own
  auto group = rt->world().split(rt->rank() < 2 ? 0 : 1, rt->rank());
  if (rt->rank() != 0) {
    // Rank 1 never joins the group's all-reduce. Ranks 1 and 2 stay away
    // from collectives (the Runtime's last desync check included) until rank
    // 0 has timed out and ended the job, so only rank 0's timeout is tested.
    std::this_thread::sleep_for(std::chrono::seconds(20));
    return 0;
  }
  tide::Tensor t = tide::ones({16});
  group->all_reduce_(t);
  try {
    t.wait_to_read();
    std::printf("tide-group-timeout-test: FAILED (no error)\n");
  } catch (const tide::BackendError& e) {
    const std::string msg = e.what();
    const bool named = msg.find("all_reduce #0 (16 x f32, sum, group of 2 ranks)") != std::string::npos &&
                       msg.find("timed out") != std::string::npos &&
                       msg.find("(world rank 0)") != std::string::npos &&
                       msg.find("ranks that did not arrive: 1 (rank 1 (world rank 1) did not answer") !=
                           std::string::npos;
    const bool broken = group->broken() && rt->world().broken();
    std::printf("%s\ntide-group-timeout-test: %s\n", msg.c_str(),
                !named ? "FAILED (message)" : !broken ? "FAILED (the world is not broken)" : "OK");
  }
  std::fflush(stdout);
  return 0;
}
