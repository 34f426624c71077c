// The README's first program, built against an installed tide.
#include <tide/tide.h>
#include <iostream>

int main(int argc, char** argv) {
  auto rt = tide::Runtime::init(argc, argv);   // engine from TIDE_* variables
  tide::Tensor x = tide::ones({1, 2});
  tide::Tensor y = tide::ones({1, 2});
  tide::Tensor z = x * y + 2;                   // returns at once
  std::cout << z << "\n";                       // a blocker: waits for z only
  for (int step = 0; step < 100; ++step) {
    auto s = rt->step();                        // a minibatch, for the sync policy
    // ... ops ...
  }
  tide::wait_all();                             // barrier: everything queued
  std::cout << rt->stats().str();               // pushes, blockers, stalls
}
