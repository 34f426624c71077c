// Scratch memory of a kernel (internal to ops/src/cuda/): stream-ordered
// from the device's default pool, which tide's storage cache can make room in.
#pragma once

#include <cstddef>
#include <vector>

#include <cuda_runtime.h>

#include <tide/core/cuda_check.h>
#include <tide/core/device.h>
#include <tide/core/stream_worker.h>

namespace tide::cuda_kernels {

/// cudaMallocAsync of a kernel's scratch memory on `stream`. When the
/// device is out of memory, the blocks tide caches for its storages go back
/// to the driver (empty_cuda_cache) and the allocation is tried once more;
/// throws tide::CudaError when it still fails.
inline void* scratch_alloc(std::size_t bytes, cudaStream_t stream) {
  void* p = nullptr;
  cudaError_t e = cudaMallocAsync(&p, bytes, stream);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky
    int device = 0;
    TIDE_CUDA_CHECK(cudaGetDevice(&device));
    empty_cuda_cache(device);
    e = cudaMallocAsync(&p, bytes, stream);
  }
  TIDE_CUDA_CHECK(e);
  return p;
}

/// Scratch kept between kernels, one block per stream for the thread that
/// launches on it. Work on a stream runs in order, so the next op on the
/// same stream may reuse the block the last one's kernels used, with no
/// call to the driver: a cudaMallocAsync and a cudaFreeAsync per op cost
/// more host time than a two-pass reduction of 64 MiB takes on an H200.
/// A block grows to the largest request up to kKeepBytes (the old one is
/// freed in stream order); get() returns null above that, and the caller
/// allocates in stream order as before. Blocks are freed when the thread
/// ends, so only a stream's worker keeps one (tide::on_stream_worker): it
/// ends before its stream is destroyed.
class StreamScratch {
 public:
  static constexpr std::size_t kKeepBytes = std::size_t{16} << 20;

  StreamScratch() = default;
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  ~StreamScratch() {
    // In stream order: the thread (a stream's worker) ends before its
    // stream is destroyed. Never cudaFree, which waits for the whole device,
    // also for a collective on another stream whose peer is gone.
    for (const Entry& e : entries_)
      if (e.p && cudaFreeAsync(e.p, e.stream) != cudaSuccess) cudaGetLastError();  // at exit the driver may be gone
  }

  /// `bytes` of scratch for work enqueued on `stream` until this thread's
  /// next get() for it; null when `bytes` is over kKeepBytes. With `zeroed`,
  /// a block made (or grown) here is set to zero in stream order first.
  void* get(std::size_t bytes, cudaStream_t stream, bool zeroed = false) {
    if (bytes > kKeepBytes) return nullptr;
    Entry* e = nullptr;
    for (Entry& x : entries_)
      if (x.stream == stream) e = &x;
    if (!e) e = &entries_.emplace_back(Entry{stream, nullptr, 0});
    if (e->bytes < bytes) {
      if (e->p) {
        void* old = e->p;
        e->p = nullptr;
        e->bytes = 0;
        TIDE_CUDA_CHECK(cudaFreeAsync(old, stream));
      }
      void* p = scratch_alloc(bytes, stream);
      if (zeroed) {
        const cudaError_t z = cudaMemsetAsync(p, 0, bytes, stream);
        if (z != cudaSuccess) {  // never handed out unzeroed
          if (cudaFreeAsync(p, stream) != cudaSuccess) cudaGetLastError();
          TIDE_CUDA_CHECK(z);
        }
      }
      e->p = p;
      e->bytes = bytes;
    }
    return e->p;
  }

 private:
  struct Entry {
    cudaStream_t stream;
    void* p;
    std::size_t bytes;
  };
  std::vector<Entry> entries_;
};

/// Counters that are zero between kernels, one block per stream for the
/// stream's worker (as StreamScratch keeps scratch): a kernel whose blocks
/// count themselves in, so that the last one in finishes the work, finds
/// them zero and leaves them zero (each last block resets its counter).
/// They are zeroed once, in stream order, when the block is made or grown.
class StreamCounters {
 public:
  /// `n` counters for one kernel on `stream`; null on any other thread than
  /// a stream's worker, or when `n` is past what a block keeps (the caller
  /// then launches a kernel that needs none).
  unsigned* get(std::size_t n, cudaStream_t stream) {
    if (!on_stream_worker() || n > kMaxCounters) return nullptr;
    return static_cast<unsigned*>(kept_.get(n * sizeof(unsigned), stream, true));
  }

  /// Past this many (4 MiB of them), a kernel that needs none costs little
  /// beside the work.
  static constexpr std::size_t kMaxCounters = std::size_t{1} << 20;

 private:
  StreamScratch kept_;
};

/// One op's scratch on `stream`: the block `kept` holds for the stream
/// when the caller is a stream's worker (tide::on_stream_worker) and
/// `bytes` fits, with no call to the driver; else memory allocated in stream
/// order now and freed in stream order by release(), or, when a launch in
/// between throws, by the destructor.
class OpScratch {
 public:
  OpScratch(StreamScratch& kept, std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    if (on_stream_worker()) p_ = kept.get(bytes, stream);
    if (!p_) {
      p_ = scratch_alloc(bytes, stream);
      owned_ = true;
    }
  }
  OpScratch(const OpScratch&) = delete;
  OpScratch& operator=(const OpScratch&) = delete;
  ~OpScratch() {
    // An exception is already on its way: this error is not the one to report.
    if (owned_ && cudaFreeAsync(p_, stream_) != cudaSuccess) cudaGetLastError();
  }

  void* get() const { return p_; }
  /// After the last launch that uses it: frees what was allocated for it
  /// (in stream order); throws tide::CudaError when that fails.
  void release() {
    if (!owned_) return;
    owned_ = false;
    TIDE_CUDA_CHECK(cudaFreeAsync(p_, stream_));
  }

 private:
  void* p_ = nullptr;
  cudaStream_t stream_;
  bool owned_ = false;
};

}  // namespace tide::cuda_kernels
