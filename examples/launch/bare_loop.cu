// The physical floor for tiny ops: a plain loop of kernel launches on one
// stream, with no runtime in between (the baseline of bench_launch).
#include <cuda_runtime.h>

#include <tide/core/cuda_check.h>

#include "bare_loop.h"

namespace {
__global__ void add_one(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
}  // namespace

namespace tide::examples {

BareLoop::BareLoop(int device, int elements) : elements_(elements) {
  TIDE_CUDA_CHECK(cudaSetDevice(device));
  cudaStream_t s = nullptr;
  TIDE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  stream_ = s;
  TIDE_CUDA_CHECK(cudaMalloc(&x_, sizeof(float) * static_cast<std::size_t>(elements)));
  TIDE_CUDA_CHECK(cudaMalloc(&y_, sizeof(float) * static_cast<std::size_t>(elements)));
  TIDE_CUDA_CHECK(cudaMemset(x_, 0, sizeof(float) * static_cast<std::size_t>(elements)));
}

BareLoop::~BareLoop() {
  cudaFree(x_);
  cudaFree(y_);
  cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void BareLoop::run(int launches) {
  auto s = static_cast<cudaStream_t>(stream_);
  const int threads = 128, blocks = (elements_ + threads - 1) / threads;
  for (int i = 0; i < launches; ++i) {
    add_one<<<blocks, threads, 0, s>>>(static_cast<const float*>(x_), static_cast<float*>(y_), elements_);
    TIDE_CUDA_LAUNCH_CHECK();
  }
  TIDE_CUDA_CHECK(cudaStreamSynchronize(s));
}

}  // namespace tide::examples
