// CUDA error messages and stickiness (see <tide/core/cuda_check.h>).
#include <tide/core/cuda_check.h>

#include <string>

namespace tide::detail {

bool cuda_error_is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

std::string cuda_error_message(cudaError_t e, const char* expr, const char* file, int line) {
  std::string msg = "CUDA error " + std::to_string(static_cast<int>(e)) + " (" + cudaGetErrorName(e) + ": " +
                    cudaGetErrorString(e) + ") in " + expr + " at " + file + ":" + std::to_string(line);
  if (int r = process_rank(); r >= 0) msg += " on rank " + std::to_string(r);
  if (cuda_error_is_sticky(e)) msg += " [sticky: this process's CUDA context is unusable; restart it]";
  return msg;
}

void throw_cuda_error(cudaError_t e, const char* expr, const char* file, int line) {
  throw CudaError(cuda_error_message(e, expr, file, line), static_cast<int>(e), cuda_error_is_sticky(e));
}

}  // namespace tide::detail
