// CUDA creation kernels behind plain C++ launchers, the entries of the CUDA
// creation table (tables.cc): device pointers, work enqueued on `stream`,
// n == 0 launches nothing, launch errors throw CudaError.
#pragma once

#include <cstddef>
#include <cstdint>

#include <tide/core/dtype.h>

#include "../kernels.h"

namespace tide::cuda_kernels {

/// out[i] = value converted to `dtype` (as static_cast does on the host).
void launch_fill(DType dtype, void* out, std::int64_t n, double value, void* stream);

/// out[i] = start + i * step, computed in double and converted once.
void launch_arange(DType dtype, void* out, std::int64_t n, double start, double step, void* stream);

using kernels::RandomKind;

/// Element i is the value for counter position offset + i of the Philox
/// scheme in ops/src/creation.cc, bit for bit (floating dtypes only).
void launch_random(RandomKind kind, DType dtype, void* out, std::int64_t n, std::uint64_t seed,
                   std::uint64_t offset, void* stream);

/// Copies `nbytes` of pageable host memory to the device on `stream`.
void copy_host_to_device(void* dst, const void* src, std::size_t nbytes, void* stream);

}  // namespace tide::cuda_kernels
