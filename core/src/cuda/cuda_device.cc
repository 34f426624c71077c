// The CUDA backend's devices: count, UUIDs, the current device (see
// ../backend.h).
#include <cuda_runtime.h>

#include <string>

#include <tide/core/cuda_check.h>

#include "../backend.h"

namespace tide::backend {

bool built() { return true; }

int device_count() {
  // Asked once: without a driver cudaGetDeviceCount fails (and leaves the
  // count alone); any error means no usable device.
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

std::string device_uuid(int device) {
  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, device); e != cudaSuccess) {
    cudaGetLastError();
    throw DeviceError("cuda:" + std::to_string(device) + ": cudaGetDeviceProperties failed: " +
                      cudaGetErrorString(e));
  }
  static const char* hex = "0123456789abcdef";
  std::string id;
  for (char c : prop.uuid.bytes) {
    const auto b = static_cast<unsigned char>(c);
    id += hex[b >> 4];
    id += hex[b & 15];
  }
  return id;
}

std::string device_unshareable(int device) {
  int mode = cudaComputeModeDefault;
  if (cudaError_t e = cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, device); e != cudaSuccess) {
    cudaGetLastError();
    throw DeviceError("cuda:" + std::to_string(device) + ": cudaDeviceGetAttribute(compute mode) failed: " +
                      cudaGetErrorString(e));
  }
  if (mode == cudaComputeModeExclusiveProcess)
    return "its compute mode is exclusive-process (nvidia-smi -c), so only one process at a time may use it";
  if (mode == cudaComputeModeProhibited) return "its compute mode is prohibited (nvidia-smi -c): no process may use it";
  return "";
}

void set_device(int device) { TIDE_CUDA_CHECK(cudaSetDevice(device)); }

DeviceGuard::DeviceGuard(int device, bool restore_any) : restore_any_(restore_any) {
  int prev = 0;
  TIDE_CUDA_CHECK(cudaGetDevice(&prev));
  if (restore_any) prev_ = prev;
  if (prev == device) return;
  TIDE_CUDA_CHECK(cudaSetDevice(device));
  prev_ = prev;
}

DeviceGuard::~DeviceGuard() {
  if (prev_ < 0) return;
  int now = -1;
  if (restore_any_ && cudaGetDevice(&now) == cudaSuccess && now == prev_) return;
  if (cudaSetDevice(prev_) != cudaSuccess) cudaGetLastError();
}

}  // namespace tide::backend
