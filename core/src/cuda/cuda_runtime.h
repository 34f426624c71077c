// The CUDA backend's process-wide pieces, used by the engines and storages
// (internal to core/; compiled only with TIDE_HAVE_CUDA).
//
// Memory: every device storage comes from a stream-ordered pool of tide's own
// (cudaMallocFromPoolAsync) on a per-device stream that never carries work,
// and goes back to it with cudaFreeAsync on that stream. A storage is freed
// only when its last reference drops, and queued ops hold a reference until
// the GPU has completed them (see Stream), so by then no stream uses the
// block: a free on the idle stream completes at once, and a later
// allocation on it may hand the block to any stream without an event.
#pragma once

#include <cstddef>
#include <cstdint>

#include <tide/core/device.h>

namespace tide::cuda_backend {

/// Sets the calling thread's current device (throws CudaError).
void set_device(int device);

/// Makes `device` current for a scope and restores the thread's previous
/// one after, so work tide does on the frontend's thread (creating streams,
/// blockers' copies, the naive engine's ops) never leaves the user's
/// current device changed. Switches only when they differ.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;  // -1: nothing to restore
};

void* alloc(int device, std::size_t nbytes);
void free(int device, void* p) noexcept;
/// Bytes of the device's pool now handed out to storages.
std::uint64_t memory_used(int device);

/// A new non-blocking stream on `device`; the comm stream gets the highest
/// priority, so a bucket's all-reduce is not starved by queued compute.
void* create_stream(int device, StreamKind kind);
void destroy_stream(int device, void* stream) noexcept;
/// The process's one stream of `kind` on `device` for engines that run ops
/// synchronously (the naive engine): made at first use, never destroyed.
void* shared_stream(int device, StreamKind kind);
/// Waits for `stream` and throws CudaError if it or an earlier op failed.
void sync_stream(void* stream);

/// TIDE_CUDA_SYNC=1: every op waits for its own completion (the analogue of
/// CUDA_LAUNCH_BLOCKING), so a fault names the op that caused it.
bool sync_mode();

/// Copies `nbytes` between any two devices as an op on `stream` (the copy
/// stream of the GPU involved). Host memory is pageable, so host<->device
/// copies go through pinned staging chunks owned by the calling worker,
/// double-buffered so the host memcpy of one chunk overlaps the DMA of the
/// other; a device-to-host copy returns once the bytes are in host memory.
void copy(void* stream, Device dst_dev, void* dst, Device src_dev, const void* src, std::size_t nbytes);

/// Blocker path: device bytes to host memory, synchronously (the producers
/// have completed already).
void read_to_host(int device, void* dst, const void* src, std::size_t nbytes);

}  // namespace tide::cuda_backend
