// Byte copies between devices, for ops that move data (copy_to, copy_).
#pragma once

#include <cstddef>

#include <tide/core/device.h>
#include <tide/core/engine.h>

namespace tide {

/// The device whose stream runs a copy from `src` to `dst`: the source GPU
/// for GPU to host and between two GPUs, else the destination (host to GPU,
/// within one device, host to host).
Device copy_device(Device dst, Device src);

/// Copies `nbytes` from `src` on `src_dev` to `dst` on `dst_dev`, as (part
/// of) an op running on `ctx`'s stream: asynchronous on a GPU stream, except
/// that a GPU-to-host copy returns once the bytes are in host memory.
/// Overlapping ranges are allowed on one device.
void copy_bytes(const OpContext& ctx, Device dst_dev, void* dst, Device src_dev, const void* src,
                std::size_t nbytes);

}  // namespace tide
