// One rank exits with an error while the others wait in a collective: the
// job must end promptly with a non-zero status (tests/comm/expect_fast_failure.sh
// times it).
#include <cstdlib>

#include <tide/tide.h>

int main(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);
  if (rt->rank() == rt->size() - 1) std::exit(3);
  tide::Tensor t = tide::ones({16});
  rt->world().all_reduce_(t);
  t.wait_to_read();
  return 0;
}
