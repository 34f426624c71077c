// The physical floor for tiny ops: a plain loop of kernel launches on one
// stream, with no runtime in between (the baseline of bench_launch), and
// the same loop with events and a polling thread beside it.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <tide/core/cuda_check.h>

#include "bare_loop.h"

namespace {
__global__ void add_one(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}

}  // namespace

namespace tide::examples {

BareLoop::BareLoop(int device, int elements) : device_(device), elements_(elements) {
  TIDE_CUDA_CHECK(cudaSetDevice(device));
  cudaStream_t s = nullptr;
  TIDE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  stream_ = s;
  TIDE_CUDA_CHECK(cudaMalloc(&x_, sizeof(float) * static_cast<std::size_t>(elements)));
  TIDE_CUDA_CHECK(cudaMalloc(&y_, sizeof(float) * static_cast<std::size_t>(elements)));
  TIDE_CUDA_CHECK(cudaMemset(x_, 0, sizeof(float) * static_cast<std::size_t>(elements)));
  for (void*& e : events_) {
    cudaEvent_t ev = nullptr;
    // As tide's completion events: no timing, a blocking synchronize.
    TIDE_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming | cudaEventBlockingSync));
    e = ev;
  }
}

BareLoop::~BareLoop() {
  for (void* e : events_)
    if (e) cudaEventDestroy(static_cast<cudaEvent_t>(e));
  cudaFree(x_);
  cudaFree(y_);
  cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

long long BareLoop::run(int launches, Extra extra) {
  auto s = static_cast<cudaStream_t>(stream_);
  const int threads = 128, blocks = (elements_ + threads - 1) / threads;
  // The poller queries the event recorded last (two in turn, as tide's
  // ring records one only after the one before it).
  std::atomic<int> latest{-1};
  std::atomic<bool> stop{false};
  std::thread poller;
  if (extra == Extra::polled) {
    poller = std::thread([&] {
      if (cudaSetDevice(device_) != cudaSuccess) return;
      while (!stop.load(std::memory_order_relaxed)) {
        const int e = latest.load(std::memory_order_acquire);
        if (e >= 0) (void)cudaEventQuery(static_cast<cudaEvent_t>(events_[e]));
        std::this_thread::yield();
      }
    });
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) {
    add_one<<<blocks, threads, 0, s>>>(static_cast<const float*>(x_), static_cast<float*>(y_), elements_);
    TIDE_CUDA_LAUNCH_CHECK();
    if (extra != Extra::none && (i + 1) % kEventEvery == 0) {
      const int e = (i / kEventEvery) % 2;
      TIDE_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(events_[e]), s));
      latest.store(e, std::memory_order_release);
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  stop.store(true);
  if (poller.joinable()) poller.join();
  TIDE_CUDA_CHECK(cudaStreamSynchronize(s));
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
}

void BareLoop::launch_add_one(const void* x, void* y, int n, void* stream) {
  const int threads = 128, blocks = (n + threads - 1) / threads;
  add_one<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(x),
                                                                    static_cast<float*>(y), n);
  TIDE_CUDA_LAUNCH_CHECK();
}

long long BareLoop::run_handed_off(int launches) {
  auto s = static_cast<cudaStream_t>(stream_);
  const int threads = 128, blocks = (elements_ + threads - 1) / threads;
  // The caller writes each launch's arguments into a slot and publishes the
  // count; the launcher reads up to the count it sees, as a runtime's
  // queue between its frontend and a stream's worker does.
  struct Slot {
    const float* x;
    float* y;
    int n;
  };
  constexpr int kSlots = 1024;
  std::vector<Slot> ring(kSlots);
  alignas(64) std::atomic<long long> pushed{0};
  alignas(64) std::atomic<long long> launched{0};
  std::atomic<long long> last_launch_ns{0};
  cudaError_t launch_error = cudaSuccess;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread launcher([&] {
    if (cudaSetDevice(device_) != cudaSuccess) launch_error = cudaGetLastError();
    long long done = 0, known = 0;
    while (done < launches) {
      while (known == done) known = pushed.load(std::memory_order_acquire);
      for (; done < known; ++done) {
        const Slot& slot = ring[static_cast<std::size_t>(done % kSlots)];
        add_one<<<blocks, threads, 0, s>>>(slot.x, slot.y, slot.n);
        if (cudaError_t e = cudaGetLastError(); e != cudaSuccess && launch_error == cudaSuccess) launch_error = e;
        launched.store(done + 1, std::memory_order_release);
      }
    }
    last_launch_ns.store(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  });
  long long seen = 0;  // the launched count last read: read again only when the ring looks full
  for (long long i = 0; i < launches; ++i) {
    // A full ring: wait in naps until half of it is free, as a runtime's
    // frontend at its cap sleeps until a share of its ops is launched (a
    // spin on the count would pull its line from the launcher at each
    // launch, slowing the launches measured).
    if (i - seen >= kSlots) {
      seen = launched.load(std::memory_order_acquire);
      while (i - seen > kSlots / 2) {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        seen = launched.load(std::memory_order_acquire);
      }
    }
    ring[static_cast<std::size_t>(i % kSlots)] = {static_cast<const float*>(x_), static_cast<float*>(y_), elements_};
    pushed.store(i + 1, std::memory_order_release);
  }
  launcher.join();
  TIDE_CUDA_CHECK(launch_error);
  TIDE_CUDA_CHECK(cudaStreamSynchronize(s));
  return last_launch_ns.load();
}

}  // namespace tide::examples
