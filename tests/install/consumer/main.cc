// The README's first program, built against an installed tide.
#include <tide/tide.h>
#include <sstream>

int main(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);            // engine from TIDE_* variables
  tide::Tensor x = tide::ones({1, 2});
  tide::Tensor y = tide::ones({1, 2});
  tide::Tensor z = x * y + 2;                            // returns at once
  tide::Tensor total = rt->world().all_reduce(z);        // so does a collective (comm stream)
  for (int step = 0; step < 100; ++step) {
    auto s = rt->step();                                 // a minibatch, for the sync policy
    // ... ops ...
  }
  std::ostringstream os;
  os << total;                                           // a blocker: waits for total only
  rt->log("sum over " + std::to_string(rt->size()) + " ranks: " + os.str());  // rank 0 prints
  tide::wait_all();                                      // barrier: everything queued
  rt->log(rt->stats().str());                            // pushes, blockers, stalls
}
