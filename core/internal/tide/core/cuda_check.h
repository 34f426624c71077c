// Checks for CUDA runtime calls. Include only where the CUDA backend is
// built (TIDE_HAVE_CUDA): it needs <cuda_runtime.h>.
//
//   TIDE_CUDA_CHECK(cudaMemcpyAsync(...));   // throws tide::CudaError
//   my_kernel<<<g, b, 0, s>>>(...);
//   TIDE_CUDA_LAUNCH_CHECK();                 // after every kernel launch
//
// The error names the expression, file:line, CUDA's error name and string
// and the rank, and says whether the error is sticky.
#pragma once

#include <cuda_runtime.h>

#include <tide/core/error.h>

namespace tide::detail {

/// True for the errors after which the context is unusable (an illegal
/// address, a failed launch, a device-side assert...).
bool cuda_error_is_sticky(cudaError_t e);
/// The message TIDE_CUDA_CHECK throws.
std::string cuda_error_message(cudaError_t e, const char* expr, const char* file, int line);
[[noreturn]] void throw_cuda_error(cudaError_t e, const char* expr, const char* file, int line);

}  // namespace tide::detail

#define TIDE_CUDA_CHECK(expr)                                                   \
  do {                                                                          \
    const cudaError_t tide_cuda_err_ = (expr);                                  \
    if (tide_cuda_err_ != cudaSuccess)                                          \
      ::tide::detail::throw_cuda_error(tide_cuda_err_, #expr, __FILE__, __LINE__); \
  } while (0)

/// After a kernel launch: a bad configuration is reported here; faults
/// inside the kernel surface later, at the event that follows it.
#define TIDE_CUDA_LAUNCH_CHECK() TIDE_CUDA_CHECK(cudaGetLastError())
