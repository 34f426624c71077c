#include <tide/core/storage.h>

#include <cstdlib>
#include <string>

#include "memory.h"

#include "backend.h"

namespace tide {

// GPU memory comes from the GPU backend (backend.h).
// CPU memory: 64-byte aligned so kernels may use aligned vector loads. Freed
// by whoever drops the last reference; queued ops hold one, so a block is
// never released before its last use has completed.
Storage::Storage(std::uint64_t engine_id, Device device, std::size_t nbytes)
    : engine_id_(engine_id), device_(device), nbytes_(nbytes) {
  if (device.is_cuda()) {
    data_ = backend::alloc(device.index, nbytes);
    return;
  }
  if (device.index < 0 || device.index >= kMaxCpuDevices)
    throw DeviceError("cannot allocate on " + device.str() + ": not a CPU device (at most " +
                      std::to_string(kMaxCpuDevices) + ")");
  auto fail = [&](const std::string& why) {
    const std::uint64_t held = cpu_memory_in_use(device.index);
    memory::throw_out_of_memory(device, nbytes, held, why,
                                memory::format_bytes(memory::cpu_held_total()) + " on all CPU devices");
  };
  // Refused here, whatever the kernel's overcommit policy: such a block
  // could never be backed, and a kernel writing it would be killed.
  const std::uint64_t host = memory::host_memory_bytes();
  if (nbytes > host) fail("more than this machine's " + memory::format_bytes(host) + " of RAM and swap");
  // Whole cache lines: a worker writing one storage never shares a line
  // with anything the frontend or another worker writes.
  std::size_t rounded = (nbytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  data_ = std::aligned_alloc(64, rounded);
  if (!data_) fail("the system refused the allocation");
  memory::note_cpu_held(device.index, nbytes);
}

Storage::~Storage() {
  if (device_.is_cuda()) {
    backend::free(device_.index, data_);
    return;
  }
  std::free(data_);
  memory::note_cpu_released(device_.index, nbytes_);
}

void use_cuda_device(int device) {
  if (device < 0 || device >= cuda_device_count())
    throw DeviceError("cuda:" + std::to_string(device) + " is not a device of this process");
  backend::set_device(device);
}

std::uint64_t cuda_memory_in_use(int device) {
  return backend::memory_used(device);
}

}  // namespace tide
