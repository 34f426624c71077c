// The CUDA backend's process-wide pieces beyond the seam (internal to
// core/src/cuda/; compiled only with TIDE_HAVE_CUDA). What core calls is
// declared in ../backend.h and defined in this folder:
//
//   cuda_device.cc   device count, UUIDs, the current device
//   cuda_runtime.cc  memory, copies, the naive engine's shared streams
//   lane.cc          a tide stream's cudaStream_t and events
//
// Memory: every device storage comes from a stream-ordered pool of tide's own
// (cudaMallocFromPoolAsync) on a per-device stream that never carries work,
// and goes back to it with cudaFreeAsync on that stream. A storage is freed
// only when its last reference drops, and queued ops hold a reference until
// the GPU has completed them (see Stream), so by then no stream uses the
// block: a free on the idle stream completes at once, and a later
// allocation on it may hand the block to any stream without an event.
#pragma once

#include <tide/core/device.h>

#include "../backend.h"

namespace tide::backend::cuda_impl {

/// A new non-blocking stream on `device`; the comm stream gets the highest
/// priority, so a bucket's all-reduce is not starved by queued compute.
void* create_stream(int device, StreamKind kind);
void destroy_stream(int device, void* stream) noexcept;

}  // namespace tide::backend::cuda_impl
