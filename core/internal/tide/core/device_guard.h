// The calling thread's current GPU for a scope, for core, ops and comm (an
// internal header: not installed). Defined by the GPU backend of the build
// (core/src/cuda/; the stub of a build without one throws DeviceError).
#pragma once

namespace tide::backend {

/// Makes `device` current for a scope and restores the thread's previous
/// one after, so work tide does on the frontend's thread (creating streams,
/// blockers' copies, the naive engine's ops, NCCL's set-up) never leaves the
/// user's current device changed. Switches only when they differ; with
/// `restore_any`, the previous device is restored at the end even when the
/// guard did not switch (a scope that switches devices itself, as NCCL's
/// set-up of one communicator per GPU does).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device, bool restore_any = false);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;  // -1: nothing to restore
  bool restore_any_ = false;
};

}  // namespace tide::backend
