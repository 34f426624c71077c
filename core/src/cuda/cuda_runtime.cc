#include "cuda_runtime.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <tide/core/cuda_check.h>

#include "../block_cache.h"
#include "../memory.h"

namespace tide::backend {

namespace {

/// The storages' pool of a device, as the Source of its block cache: blocks
/// are taken and given back on an idle stream of its own.
struct PoolSource final : BlockCache::Source {
  cudaMemPool_t pool = nullptr;
  cudaMemPool_t scratch_pool = nullptr;  // the device's default pool: kernels' scratch memory
  cudaStream_t stream = nullptr;

  void* take(std::size_t bytes) override {
    void* p = nullptr;
    const cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool, stream);
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky: the device stays usable
      return nullptr;
    }
    TIDE_CUDA_CHECK(e);
    return p;
  }
  void give(void* block, std::size_t) noexcept override {
    // Errors here (a dead context at exit) cannot be reported.
    if (cudaFreeAsync(block, stream) != cudaSuccess) cudaGetLastError();
  }
  void settle() noexcept override {
    // The frees take effect, and the pool returns what it holds unused to
    // the driver, so that a request of another size can be mapped afresh;
    // so does the scratch pool, whatever of it no kernel holds now.
    if (cudaStreamSynchronize(stream) != cudaSuccess || cudaMemPoolTrimTo(pool, 0) != cudaSuccess)
      cudaGetLastError();
    if (scratch_pool && cudaMemPoolTrimTo(scratch_pool, 0) != cudaSuccess) cudaGetLastError();
  }
};

/// Per device: the pool and the host-side cache in front of it.
struct DeviceMemory {
  PoolSource source;
  std::unique_ptr<BlockCache> cache;
};

constexpr int kMaxDevices = 64;

/// TIDE_CUDA_POOL_KEEP_MB: the most freed memory kept for reuse, in MiB; by
/// default everything, like a caching allocator. Read once.
std::optional<std::uint64_t> keep_bytes() {
  static const std::optional<std::uint64_t> keep = []() -> std::optional<std::uint64_t> {
    if (auto mb = memory::whole_number_env("TIDE_CUDA_POOL_KEEP_MB", "MiB")) return *mb << 20;
    return std::nullopt;
  }();
  return keep;
}

DeviceMemory& memory(int device) {
  // Never destroyed: storages may die during static destruction. The fast
  // path (every allocation and free) is one load.
  static auto* slots = new std::array<std::atomic<DeviceMemory*>, kMaxDevices>();
  static auto* mutex = new std::mutex();
  if (device < 0 || device >= kMaxDevices)
    throw DeviceError("cuda:" + std::to_string(device) + " is past the " + std::to_string(kMaxDevices) +
                      " GPUs tide can use");
  auto& slot = (*slots)[static_cast<std::size_t>(device)];
  if (DeviceMemory* m = slot.load(std::memory_order_acquire)) return *m;
  std::lock_guard<std::mutex> lock(*mutex);
  if (DeviceMemory* m = slot.load(std::memory_order_acquire)) return *m;
  auto made = std::make_unique<DeviceMemory>();
  DeviceMemory& m = *made;
  {
    const std::optional<std::uint64_t> keep = keep_bytes();  // a bad value throws before anything is made
    int prev = 0;
    TIDE_CUDA_CHECK(cudaGetDevice(&prev));
    TIDE_CUDA_CHECK(cudaSetDevice(device));
    // A pool of the storages' own: kernels' scratch memory (from the
    // default pool, on worker streams) never shares its blocks, and no
    // allocation may take a block whose free is still pending on another
    // stream (internal dependencies off), so a block handed out is free now.
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    TIDE_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
    // The cache keeps freed blocks up to the limit; past it, the pool keeps
    // nothing. Without a limit both keep everything.
    std::uint64_t threshold = keep ? 0 : std::numeric_limits<std::uint64_t>::max();
    std::uint64_t scratch_threshold = keep ? *keep : std::numeric_limits<std::uint64_t>::max();
    TIDE_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    int no = 0;
    TIDE_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no));
    // Kernels take their scratch memory (a two-pass reduction's partials,
    // a loss's per-row terms) with cudaMallocAsync from the device's current
    // pool (its default one), whose release threshold is 0 by default: every stream or event
    // synchronize, which the completion thread calls all the time, gave the
    // freed scratch back to the driver, and the next op's cudaMallocAsync
    // mapped memory afresh, host work on every such op. It keeps what is
    // freed, up to the same limit as the storages' cache
    // (TIDE_CUDA_POOL_KEEP_MB), and empty_cuda_cache trims it.
    cudaMemPool_t scratch_pool = nullptr;
    TIDE_CUDA_CHECK(cudaDeviceGetMemPool(&scratch_pool, device));  // the one cudaMallocAsync takes from
    TIDE_CUDA_CHECK(cudaMemPoolSetAttribute(scratch_pool, cudaMemPoolAttrReleaseThreshold, &scratch_threshold));
    // Kept longer, freed scratch would also be taken more often by another
    // stream before its free has run, the driver making that stream wait for
    // the freeing one: a dependency between streams that no op asked for.
    TIDE_CUDA_CHECK(cudaMemPoolSetAttribute(scratch_pool, cudaMemPoolReuseAllowInternalDependencies, &no));
    TIDE_CUDA_CHECK(cudaStreamCreateWithFlags(&m.source.stream, cudaStreamNonBlocking));
    TIDE_CUDA_CHECK(cudaSetDevice(prev));
    m.source.pool = pool;
    m.source.scratch_pool = scratch_pool;
    m.cache = std::make_unique<BlockCache>(m.source, keep ? *keep : std::numeric_limits<std::uint64_t>::max());
  }
  slot.store(made.release(), std::memory_order_release);
  return m;
}

/// TIDE_CUDA_STAGING_KB: the size of one pinned staging chunk.
std::size_t staging_chunk_bytes() {
  static const std::size_t bytes = [] {
    std::size_t kb = 4096;
    if (const char* v = std::getenv("TIDE_CUDA_STAGING_KB"); v && *v) kb = std::strtoull(v, nullptr, 10);
    return std::max<std::size_t>(kb, 64) << 10;
  }();
  return bytes;
}

/// Two pinned chunks and their events, one set per worker thread (each
/// stream has one worker, so per copy stream). Freed at thread exit.
struct Staging {
  int device = -1;
  void* chunk[2] = {nullptr, nullptr};
  cudaEvent_t done[2] = {nullptr, nullptr};
  bool busy[2] = {false, false};

  ~Staging() {
    for (int i = 0; i < 2; ++i) {
      // A chunk's last host-to-device transfer may still read it.
      if (busy[i] && done[i] && cudaEventSynchronize(done[i]) != cudaSuccess) cudaGetLastError();
      if (done[i]) cudaEventDestroy(done[i]);
      if (chunk[i]) cudaFreeHost(chunk[i]);
    }
  }
  void ensure(int dev) {
    if (chunk[0]) return;
    device = dev;
    for (int i = 0; i < 2; ++i) {
      TIDE_CUDA_CHECK(cudaHostAlloc(&chunk[i], staging_chunk_bytes(), cudaHostAllocPortable));
      TIDE_CUDA_CHECK(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming | cudaEventBlockingSync));
    }
  }
  /// Waits until chunk i's previous DMA is over.
  void wait(int i) {
    if (busy[i]) TIDE_CUDA_CHECK(cudaEventSynchronize(done[i]));
    busy[i] = false;
  }
};

Staging& staging(int device) {
  thread_local std::unordered_map<int, Staging> per_device;
  Staging& s = per_device[device];
  s.ensure(device);
  return s;
}

void copy_host_to_device(cudaStream_t s, int dev, char* dst, const char* src, std::size_t n) {
  Staging& st = staging(dev);
  const std::size_t chunk = staging_chunk_bytes();
  int i = 0;
  for (std::size_t off = 0; off < n; off += chunk, i ^= 1) {
    const std::size_t len = std::min(chunk, n - off);
    st.wait(i);  // its last DMA must be done before the host refills it
    std::memcpy(st.chunk[i], src + off, len);
    TIDE_CUDA_CHECK(cudaMemcpyAsync(dst + off, st.chunk[i], len, cudaMemcpyHostToDevice, s));
    TIDE_CUDA_CHECK(cudaEventRecord(st.done[i], s));
    st.busy[i] = true;
  }
  // Chunks still in flight are waited for by the next copy that reuses them;
  // the bytes were taken from the source already, so the op is done with it.
}

void copy_device_to_host(cudaStream_t s, int dev, char* dst, const char* src, std::size_t n) {
  Staging& st = staging(dev);
  const std::size_t chunk = staging_chunk_bytes();
  // Chunk k's DMA is issued before chunk k-1 is drained to the destination,
  // so the host memcpy overlaps the next transfer.
  std::size_t pending_off = 0, pending_len = 0;
  int pending = -1;
  int i = 0;
  for (std::size_t off = 0; off < n; off += chunk, i ^= 1) {
    const std::size_t len = std::min(chunk, n - off);
    st.wait(i);
    TIDE_CUDA_CHECK(cudaMemcpyAsync(st.chunk[i], src + off, len, cudaMemcpyDeviceToHost, s));
    TIDE_CUDA_CHECK(cudaEventRecord(st.done[i], s));
    st.busy[i] = true;
    if (pending >= 0) {
      st.wait(pending);
      std::memcpy(dst + pending_off, st.chunk[pending], pending_len);
    }
    pending = i;
    pending_off = off;
    pending_len = len;
  }
  if (pending >= 0) {
    st.wait(pending);
    std::memcpy(dst + pending_off, st.chunk[pending], pending_len);
  }
}

[[noreturn]] void throw_out_of_memory(int device, std::size_t nbytes) {
  std::string why = "the GPU's memory is exhausted";
  std::uint64_t held = 0;
  try {
    DeviceGuard guard(device);
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess)
      why = memory::format_bytes(free) + " free of " + memory::format_bytes(total) + " on the GPU";
    else
      cudaGetLastError();
    held = memory_used(device);
  } catch (const CudaError&) {
  }
  memory::throw_out_of_memory(cuda(device), nbytes, held, why);
}
}  // namespace

void* alloc(int device, std::size_t nbytes) {
  void* p = memory(device).cache->allocate(nbytes);
  if (!p) throw_out_of_memory(device, nbytes);
  return p;
}

void free(int device, void* p, std::size_t nbytes) noexcept {
  if (!p) return;
  memory(device).cache->release(p, nbytes);
}

void empty_cache(int device) noexcept {
  try {
    DeviceMemory& m = memory(device);
    m.cache->empty();
    m.source.settle();
  } catch (const std::exception&) {  // the pool could not even be made: nothing is cached
  }
}

void synchronize_device(int device) noexcept {
  int current = 0;
  if (cudaGetDevice(&current) != cudaSuccess) current = device;
  if (cudaSetDevice(device) == cudaSuccess && cudaDeviceSynchronize() != cudaSuccess) cudaGetLastError();
  if (cudaSetDevice(current) != cudaSuccess) cudaGetLastError();
}

std::uint64_t memory_used(int device) {
  if (device < 0 || device >= device_count())
    throw DeviceError("cuda:" + std::to_string(device) + " is not a device of this process");
  return memory(device).cache->stats().in_use_bytes;
}

void* cuda_impl::create_stream(int device, StreamKind kind) {
  (void)memory(device);  // the device's pools are set up before any op of the stream takes scratch memory
  DeviceGuard guard(device);
  int least = 0, greatest = 0;
  TIDE_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t s = nullptr;
  TIDE_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking,
                                               kind == StreamKind::comm ? greatest : least));
  return s;
}

void cuda_impl::destroy_stream(int device, void* stream) noexcept {
  if (!stream) return;
  int prev = -1;
  if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
  if (cudaSetDevice(device) != cudaSuccess || cudaStreamDestroy(static_cast<cudaStream_t>(stream)) != cudaSuccess)
    cudaGetLastError();
  if (prev >= 0 && prev != device && cudaSetDevice(prev) != cudaSuccess) cudaGetLastError();
}

void* shared_stream(int device, StreamKind kind) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, void*> streams;
  std::lock_guard<std::mutex> lock(mutex);
  void*& s = streams[{device, static_cast<int>(kind)}];
  if (!s) s = cuda_impl::create_stream(device, kind);
  return s;
}

void sync_stream(void* stream) { TIDE_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream))); }

bool sync_mode() {
  static const bool on = [] {
    const char* v = std::getenv("TIDE_CUDA_SYNC");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

void copy(void* stream, Device dst_dev, void* dst, Device src_dev, const void* src, std::size_t nbytes) {
  if (nbytes == 0) return;
  if (!stream)
    throw DeviceError("a copy between " + src_dev.str() + " and " + dst_dev.str() + " must run on a GPU's stream");
  auto s = static_cast<cudaStream_t>(stream);
  auto* d = static_cast<char*>(dst);
  const auto* from = static_cast<const char*>(src);
  if (dst_dev.is_cuda() && src_dev.is_cuda()) {
    if (dst_dev.index == src_dev.index) {
      TIDE_CUDA_CHECK(cudaMemcpyAsync(d, from, nbytes, cudaMemcpyDeviceToDevice, s));
    } else {
      TIDE_CUDA_CHECK(cudaMemcpyPeerAsync(d, dst_dev.index, from, src_dev.index, nbytes, s));
    }
  } else if (dst_dev.is_cuda()) {
    copy_host_to_device(s, dst_dev.index, d, from, nbytes);
  } else if (src_dev.is_cuda()) {
    copy_device_to_host(s, src_dev.index, d, from, nbytes);
  } else {
    std::memmove(d, from, nbytes);
  }
}

void read_to_host(int device, void* dst, const void* src, std::size_t nbytes) {
  if (nbytes == 0) return;
  DeviceGuard guard(device);
  // The producers have completed: a plain synchronous copy (on the legacy
  // stream, which does not wait for tide's non-blocking streams).
  TIDE_CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToHost));
}

}  // namespace tide::backend
