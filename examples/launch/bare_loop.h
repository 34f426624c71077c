// A bare CUDA launch loop (compiled by nvcc in bare_loop.cu).
#pragma once

namespace tide::examples {

class BareLoop {
 public:
  BareLoop(int device, int elements);
  ~BareLoop();
  BareLoop(const BareLoop&) = delete;
  BareLoop& operator=(const BareLoop&) = delete;
  /// `launches` kernels computing y = x + 1 back to back, then a sync.
  void run(int launches);

 private:
  int elements_;
  void* stream_ = nullptr;
  void* x_ = nullptr;
  void* y_ = nullptr;
};

}  // namespace tide::examples
