// One rank's op fails (its kernel throws) before an all-reduce: every rank
// must end promptly, non-zero, with the original error in the output, instead
// of the others waiting in the all-reduce for TIDE_COMM_TIMEOUT (the test
// sets 60 s and allows 15). tests/comm/expect_job_failure.sh times it.
//
//   uncaught  rank 1 waits for the failed op's output; the BackendError
//             escapes main uncaught (so nothing unwinds: the Runtime's
//             terminate handler ends the job)
//   poisoned  the failed op's output is rank 1's all-reduce input, so the
//             all-reduce is skipped on rank 1; it waits for the result and
//             the error escapes main
//   unwind    like uncaught, but main catches the error outside the
//             Runtime's scope: ~Runtime runs while it unwinds
//   steps     a training-like loop of steps without blockers; rank 1's
//             gradient fails at step 3 and only its all-reduce is skipped;
//             the desync check stops every rank at a later step, and the
//             error escapes main when the ranks wait at the end
//   handled   like steps, but each step reads its result, and rank 1
//             handles its own failure and goes on (skipping a bad batch, say):
//             its later all-reduces pair with the others' earlier ones, and
//             without the desync check the last one would wait for the
//             timeout
//
// A rank whose collectives all complete prints "finished normally": that
// must not happen on any rank.
#include <cstdio>
#include <tide/core/loc.h>
#include <stdexcept>
#include <string>

#include <tide/tide.h>

namespace {

tide::Tensor failed_op_output(int rank) {
  tide::Tensor t = tide::Tensor::empty(tide::Shape{1000}, tide::DType::f32);
  tide::OpDesc op;
  op.name = "failing_op";
  op.device = tide::cpu(0);
  op.loc = tide::Loc::current();
  op.fn = [rank](const tide::OpContext&) {
    throw std::runtime_error("injected failure on rank " + std::to_string(rank));
  };
  op.writes.add(t.storage());
  tide::current_engine().push(std::move(op));
  return t;
}

int run(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  const int rank = rt->rank();
  if (rt->size() < 2 ||
      (mode != "uncaught" && mode != "poisoned" && mode != "unwind" && mode != "steps" && mode != "handled")) {
    std::printf("usage: mpirun -np N %s uncaught|poisoned|unwind|steps|handled (N >= 2)\n", argv[0]);
    return 2;
  }
  tide::Tensor t = tide::ones({1000});
  if (mode == "steps") {
    for (int s = 0; s < 20; ++s) {
      auto step = rt->step();
      tide::Tensor grad = rank == 1 && s == 3 ? failed_op_output(rank) : tide::ones({1000});
      rt->world().all_reduce_(grad);
      t += grad;
    }
    rt->wait_all();
  } else if (mode == "handled") {
    for (int s = 0; s < 20; ++s) {
      auto step = rt->step();
      tide::Tensor grad = rank == 1 && s == 3 ? failed_op_output(rank) : tide::ones({1000});
      rt->world().all_reduce_(grad);
      try {
        grad.wait_to_read();
      } catch (const tide::BackendError& e) {
        if (std::string(e.what()).find("injected failure") == std::string::npos) throw;
        std::fprintf(stderr, "rank %d: skipping step %d: %s\n", rank, s, e.what());
      }
    }
  } else {
    if (rank == 1) {
      tide::Tensor bad = failed_op_output(rank);
      if (mode == "poisoned") {
        rt->world().all_reduce_(bad);  // skipped on this rank: its input failed
      }
      bad.wait_to_read();  // throws the BackendError
    }
    rt->world().all_reduce_(t);
    t.wait_to_read();
  }
  std::printf("rank %d: finished normally\n", rank);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "unwind") return run(argc, argv);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "main caught: %s\n", e.what());  // too late: ~Runtime has ended the job
    return 1;
  }
}
