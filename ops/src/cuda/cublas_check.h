// Checks for cuBLAS calls, like TIDE_CUDA_CHECK for the runtime. Include
// only in sources compiled with the CUDA backend (it needs <cublas_v2.h>).
//
//   TIDE_CUBLAS_CHECK(cublasSetStream(handle, stream));   // throws tide::CudaError
#pragma once

#include <cublas_v2.h>

#include <string>

#include <tide/core/error.h>

namespace tide::detail {

/// "cuBLAS error 13 (CUBLAS_STATUS_EXECUTION_FAILED: ...) in <expr> at
/// file:line on rank r". A failing cuBLAS call leaves the CUDA context
/// usable unless the kernel it launched faulted, which the CUDA runtime
/// reports (sticky) at the stream's next event, so these are not sticky.
[[noreturn]] inline void throw_cublas_error(cublasStatus_t s, const char* expr, const char* file,
                                            int line) {
  std::string msg = "cuBLAS error " + std::to_string(static_cast<int>(s)) + " (" +
                    cublasGetStatusName(s) + ": " + cublasGetStatusString(s) + ") in " + expr +
                    " at " + file + ":" + std::to_string(line);
  if (int r = process_rank(); r >= 0) msg += " on rank " + std::to_string(r);
  throw CudaError(msg, static_cast<int>(s), /*sticky=*/false);
}

}  // namespace tide::detail

#define TIDE_CUBLAS_CHECK(expr)                                                      \
  do {                                                                               \
    const cublasStatus_t tide_cublas_status_ = (expr);                               \
    if (tide_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                \
      ::tide::detail::throw_cublas_error(tide_cublas_status_, #expr, __FILE__, __LINE__); \
  } while (0)
