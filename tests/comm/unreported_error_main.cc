// An op fails on the backend and nothing ever reads its output: main returns
// 0, yet the job failed, so the process must exit non-zero (after the
// Runtime says which error went unreported). With mpirun, every rank's op
// fails; without, the one rank's.
#include <cstdio>
#include <tide/core/loc.h>
#include <stdexcept>
#include <string>

#include <tide/tide.h>

int main(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);
  tide::Tensor t = tide::Tensor::empty(tide::Shape{16}, tide::DType::f32);
  tide::OpDesc op;
  op.name = "failing_op";
  op.device = tide::cpu(0);
  op.loc = tide::Loc::current();
  op.fn = [rank = rt->rank()](const tide::OpContext&) {
    throw std::runtime_error("injected failure on rank " + std::to_string(rank));
  };
  op.writes.add(t.storage());
  tide::current_engine().push(std::move(op));
  std::printf("rank %d: main returns 0\n", rt->rank());
  return 0;
}
