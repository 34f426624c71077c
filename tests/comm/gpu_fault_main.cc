// GPU collectives (NCCL) when something goes wrong on one rank, and at the
// end of a job. Every rank's tensors are on its GPU (Runtime::device());
// ranks that share a GPU reach each other through NCCL's network transport.
//
//   gpu_fault_main killed    rank 1 dies (SIGKILL) in a 256 MiB all-reduce:
//                            the job must end non-zero within the deadline,
//                            naming the collective (expect_job_failure.sh)
//   gpu_fault_main stopped   rank 1 stops (SIGSTOP) in it: the others fail
//                            at TIDE_COMM_TIMEOUT and end the job
//   gpu_fault_main desync    rank 1 swaps an all-reduce and a broadcast at
//                            step 5: the desync check names the first
//                            differing collective on every rank
//   gpu_fault_main shutdown  collectives of the world and of a sub-group
//                            still queued when main returns: the Runtime
//                            drains them, finalizes NCCL, then MPI; exit 0
//
// Without a usable GPU on some rank, rank 0 prints "SKIPPED: <why>" and
// every rank returns 0 (ctest: SKIP_REGULAR_EXPRESSION).
#include <mpi.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <tide/tide.h>

namespace {

/// Why this rank cannot run NCCL collectives on its GPU ("" if it can).
std::string unusable_here(tide::Runtime& rt) {
  if (!tide::cuda_built()) return "tide was built without the CUDA backend";
  if (tide::cuda_device_count() == 0) return "no CUDA device here";
  if (!tide::Communicator::nccl_built()) return "tide was built without NCCL";
  if (!rt.device().is_cuda()) return "the runtime gave this rank " + rt.device().str();
  return "";
}

/// The same answer on every rank (MPI on the world, before any tide
/// collective): why some rank cannot, or "".
std::string unusable_anywhere(tide::Runtime& rt) {
  const std::string why = unusable_here(rt);
  int ok = why.empty() ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all == 1) return "";
  return why.empty() ? "another rank cannot use NCCL" : why;
}

tide::Tensor on_gpu(tide::Runtime& rt, std::int64_t n, double value) {
  return tide::full({n}, value, {tide::DType::f32, rt.device()});
}

int killed_or_stopped(tide::Runtime& rt, bool kill) {
  tide::Tensor warm = on_gpu(rt, 16, 1.0);
  rt.world().all_reduce_(warm);
  warm.wait_to_read();  // the NCCL communicator is up on every rank
  tide::Tensor big = on_gpu(rt, std::int64_t{1} << 26, 1.0);
  big.wait_to_read();
  rt.world().all_reduce_(big);
  if (rt.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    raise(kill ? SIGKILL : SIGSTOP);
  }
  big.wait_to_read();  // throws on a survivor; the Runtime then ends the job
  std::printf("[rank %d] finished normally\n", rt.rank());
  return 0;
}

int desync(tide::Runtime& rt) {
  constexpr int kSteps = 20, kBadStep = 5;
  tide::Tensor a = on_gpu(rt, 1000, 1.0);
  tide::Tensor b = on_gpu(rt, 1000, 2.0);
  for (int s = 0; s < kSteps; ++s) {
    auto step = rt.step();
    if (rt.rank() == 1 && s == kBadStep) {
      rt.world().broadcast_(b, 0);
      rt.world().all_reduce_(a);
    } else {
      rt.world().all_reduce_(a);
      rt.world().broadcast_(b, 0);
    }
  }
  std::string error;
  try {
    rt.wait_all();
  } catch (const tide::Error& e) {
    error = e.what();
  }
  const std::string failure = rt.world().failure();
  const bool named = failure.find("desync at collective #") != std::string::npos &&
                     failure.find("all_reduce (1000 x f32, sum)") != std::string::npos &&
                     failure.find("broadcast (1000 x f32, root 0)") != std::string::npos;
  std::printf("[rank %d] error: %s\n[rank %d] world: %s\n", rt.rank(), error.c_str(), rt.rank(), failure.c_str());
  std::fflush(stdout);
  int ok = named && !error.empty() ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rt.rank() == 0)
    std::printf("tide-gpu-fault desync: %s\n", all_ok ? "OK" : "FAILED (a rank did not name the desync)");
  std::fflush(stdout);
  // Rank 0 prints before the others' MPI_Abort (see desync_main.cc).
  int done = 1;
  if (rt.rank() == 0) {
    for (int r = 1; r < rt.size(); ++r) MPI_Send(&done, 1, MPI_INT, r, 0, MPI_COMM_WORLD);
  } else {
    MPI_Recv(&done, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  return 0;  // the world is broken: the Runtime ends the job with MPI_Abort
}

int shutdown(tide::Runtime& rt) {
  tide::Tensor t = on_gpu(rt, 1 << 20, 1.0);
  rt.world().all_reduce_(t);
  const std::vector<float> v = t.to_vector<float>();
  const float want = static_cast<float>(rt.size());
  bool ok = v.front() == want && v.back() == want;
  // A sub-group (even and odd ranks) with its own NCCL communicator, dropped
  // while its last collective is queued; then world collectives left
  // queued when main returns.
  {
    auto half = rt.world().split(rt.rank() % 2);
    tide::Tensor h = on_gpu(rt, 1 << 16, 1.0);
    half->all_reduce_(h);
    const float in_half = static_cast<float>(half->size());
    const std::vector<float> hv = h.to_vector<float>();
    ok = ok && hv.front() == in_half && hv.back() == in_half;
    half->all_reduce_(h);
  }
  for (int i = 0; i < 8; ++i) rt.world().all_reduce_(t);
  int all_ok = 0, mine = ok ? 1 : 0;
  MPI_Allreduce(&mine, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rt.rank() == 0) std::printf("tide-gpu-fault shutdown: values %s\n", all_ok ? "right" : "WRONG");
  std::fflush(stdout);
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  const int need = mode == "killed" ? 3 : 2;
  if ((mode != "killed" && mode != "stopped" && mode != "desync" && mode != "shutdown") || rt->size() < need) {
    std::printf("usage: mpirun -np N %s killed|stopped|desync|shutdown (N >= 2; 3 for killed)\n", argv[0]);
    return 2;
  }
  if (const std::string why = unusable_anywhere(*rt); !why.empty()) {
    if (rt->rank() == 0) std::printf("SKIPPED: %s\n", why.c_str());
    return 0;
  }
  if (rt->rank() == 0 && rt->gpu_shared()) std::printf("%s\n", rt->gpu_sharing_note().c_str());
  if (mode == "killed" || mode == "stopped") return killed_or_stopped(*rt, mode == "killed");
  if (mode == "desync") return desync(*rt);
  return shutdown(*rt);
}
