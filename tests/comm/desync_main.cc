// Ranks whose collective sequences part ways must be stopped by the desync
// check (at the next step boundary) with the first differing collective
// named, long before TIDE_COMM_TIMEOUT (the test sets 60 s). Each rank pushes
// kSteps steps of [all_reduce(a), broadcast(b)] without a blocker; at step
// kBadStep rank 1 (of 2 or more) does something else:
//
//   order  swaps the two (1000 x f32: MPI's non-blocking collectives; they
//          may hang, complete with garbage or fail: the check names it)
//   count  all-reduces 999 elements instead of 1000
//   small  the same with 100 and 99 elements and the desync check off: a
//          collective this small is one exchange of messages whose headers
//          name the collective, so the exchange itself names the desync
//   large  swaps them with 100000 x f32 (the blocking path: the ranks'
//          arrival check compares the collectives before MPI is called)
//   skip   feeds its all_reduce from an op that fails, so the engine skips
//          it on rank 1 only (rank 0 runs it and waits)
//   skipsmall  the same skip with 100 elements and the desync check off:
//          small all-reduces are exchanges of headed messages, and a rank
//          a collective ahead must be named as the skip it is (by the roll
//          call, or by an exchange that sees its later header), never as a
//          desync
//   late   the same skip with the desync check off (TIDE_DESYNC_CHECK=0),
//          and the other ranks reach step kBadStep 3 s late: rank 1 finds
//          the skip alone (its roll call sees a peer in the collective it
//          skipped) and leaves its collectives before any peer asks it; it
//          must tell them, or they wait the whole timeout
//
// Then every rank waits for everything, checks the error it gets and why
// the world broke, and rank 0 prints one verdict for all ranks (gathered with
// MPI on MPI_COMM_WORLD: tide's world communicator is broken by then).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include <tide/tide.h>

namespace {

constexpr int kSteps = 20;
constexpr int kBadStep = 5;  // collectives #10 and #11

tide::Tensor from_failed_op(std::int64_t n) {
  tide::Tensor t = tide::Tensor::empty(tide::Shape{n}, tide::DType::f32);
  tide::OpDesc op;
  op.name = "failing_op";
  op.device = tide::cpu(0);
  op.fn = [](const tide::OpContext&) { throw std::runtime_error("injected failure on rank 1"); };
  op.writes.add(t.storage());
  tide::current_engine().push(std::move(op));
  return t;
}

/// What every rank's error (or the world's failure) must contain.
std::string expected(const std::string& mode, int size) {
  const std::string others = size == 2 ? "rank 0" : size == 3 ? "ranks 0,2" : "ranks 0,2-" + std::to_string(size - 1);
  if (mode == "order")
    return "desync at collective #10: " + others + " pushed all_reduce (1000 x f32, sum), "
           "rank 1 pushed broadcast (1000 x f32, root 0)";
  if (mode == "count")
    return "desync at collective #10: " + others + " pushed all_reduce (1000 x f32, sum), "
           "rank 1 pushed all_reduce (999 x f32, sum)";
  if (mode == "small")  // named by the exchange that is the collective, with the periodic check off
    return "desync at collective #10: " + others + " pushed all_reduce (100 x f32, sum), "
           "rank 1 pushed all_reduce (99 x f32, sum) (seen as the ranks exchanged it";
  if (mode == "large")
    return "desync at collective #10: " + others + " pushed all_reduce (100000 x f32, sum), "
           "rank 1 pushed broadcast (100000 x f32, root 0)";
  const std::string count = mode == "skipsmall" ? "100" : "1000";
  return "collective #10 (all_reduce (" + count + " x f32, sum)) was skipped on rank 1, because its input comes "
         "from a failed op (that rank's error names it), and run on " + others;
}

}  // namespace

int main(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  if (rt->size() < 2 || (mode != "order" && mode != "count" && mode != "small" && mode != "large" && mode != "skip" &&
                         mode != "skipsmall" && mode != "late")) {
    std::printf("usage: mpirun -np N %s order|count|small|large|skip|skipsmall|late (N >= 2)\n", argv[0]);
    return 2;
  }
  if (!rt->world().desync_check() && mode != "late" && mode != "small" && mode != "skipsmall") {
    std::printf("tide-desync-test: FAILED (the check is off: TIDE_DESYNC_CHECK=0?)\n");
    return 1;
  }
  const int rank = rt->rank();
  const std::int64_t n = mode == "large" ? 100000 : mode == "small" || mode == "skipsmall" ? 100 : 1000;
  tide::Tensor a = tide::full({n}, 1.0);
  tide::Tensor b = tide::full({n}, 2.0);
  tide::Tensor a_short = tide::full({n - 1}, 1.0);

  using clock = std::chrono::steady_clock;
  clock::time_point bad_pushed{};
  std::string error;
  for (int s = 0; s < kSteps; ++s) {
    auto step = rt->step();
    if (s == kBadStep && mode == "late" && rank != 1) std::this_thread::sleep_for(std::chrono::seconds(3));
    if (s == kBadStep) bad_pushed = clock::now();
    const bool bad = rank == 1 && s == kBadStep;
    if (bad && (mode == "order" || mode == "large")) {
      rt->world().broadcast_(b, 0);
      rt->world().all_reduce_(a);
    } else if (bad && (mode == "count" || mode == "small")) {
      rt->world().all_reduce_(a_short);
      rt->world().broadcast_(b, 0);
    } else if (bad && (mode == "skip" || mode == "skipsmall" || mode == "late")) {
      tide::Tensor g = from_failed_op(n);
      rt->world().all_reduce_(g);
      rt->world().broadcast_(b, 0);
    } else {
      rt->world().all_reduce_(a);
      rt->world().broadcast_(b, 0);
    }
  }
  try {
    rt->wait_all();
  } catch (const tide::BackendError& e) {
    error = e.what();
  }
  const double caught_ms = std::chrono::duration<double, std::milli>(clock::now() - bad_pushed).count();
  const std::string failure = rt->world().failure();
  const std::string want = expected(mode, rt->size());
  // The first error a rank meets may be an earlier one that the desync
  // explains (MPI's truncation of a shorter all-reduce, rank 1's own failed
  // op): the world's failure then names the desync first.
  bool named = failure.find(want) != std::string::npos;
  if ((mode == "skip" || mode == "skipsmall" || mode == "late") && !named) {
    // A rank judges the skip as soon as one peer has run collective #10:
    // with 3 or more ranks, a slower peer may not have reached it yet, and
    // the message then names the ranks known to have run it.
    const std::string head = "collective #10 (all_reduce (" + std::to_string(n) +
                             " x f32, sum)) was skipped on rank 1, because its "
                             "input comes from a failed op (that rank's error names it), and run on ";
    for (int r = 0; r < rt->size() && !named; ++r)
      if (r != 1) named = failure.find(head + "rank " + std::to_string(r) + ":") != std::string::npos;
  }
  std::printf("[rank %d] caught %.0f ms after pushing step %d\n[rank %d] error: %s\n[rank %d] world: %s\n", rank,
              caught_ms, kBadStep, rank, error.c_str(), rank, failure.c_str());
  std::fflush(stdout);

  // One verdict for all ranks. The engine is idle now (wait_all returned),
  // so this thread may call MPI.
  int ok = named && !error.empty() ? 1 : 0, all_ok = 0;
  double worst_ms = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&caught_ms, &worst_ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  // Times the build's TIDE_TEST_TIME_SCALE (tests/CMakeLists.txt).
  const char* scale = std::getenv("TIDE_TEST_TIME_SCALE");
  const double bound_ms = 10000 * std::max(1.0, scale ? std::atof(scale) : 1.0);
  if (rank == 0) {
    std::printf("tide-desync-test %s: %s (every rank caught it within %.0f ms; bound %.0f ms, timeout 60 s)\n",
                mode.c_str(),
                !all_ok                ? "FAILED (a rank did not name the desync)"
                : worst_ms > bound_ms ? "FAILED (too slow)"
                                       : "OK",
                worst_ms, bound_ms);
  }
  std::fflush(stdout);
  // The other ranks end the job with MPI_Abort as soon as they return, which
  // may kill rank 0 before it has printed the verdict (it can still be inside
  // the all-reduces above when they leave them). So they wait for a word from
  // rank 0, sent only after the verdict is out.
  int done = 1;
  if (rank == 0) {
    for (int r = 1; r < rt->size(); ++r) MPI_Send(&done, 1, MPI_INT, r, 0, MPI_COMM_WORLD);
  } else {
    MPI_Recv(&done, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  return 0;  // the world is broken: the Runtime ends the job with MPI_Abort
}
