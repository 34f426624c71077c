#include <tide/core/storage.h>

#include <cstdlib>
#include <string>

#include "cpu_cache.h"
#include "memory.h"

#include "backend.h"

namespace tide {

// GPU memory comes from the GPU backend (backend.h).
// CPU memory: 64-byte aligned so kernels may use aligned vector loads, from
// the caching allocator (cpu_cache.h). Given back by whoever drops the last
// reference; queued ops hold one, so a block is never reused before its last
// use has completed: stream order needs nothing more on the CPU.
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
  // Whole cache lines (a worker writing one storage never shares a line
  // with anything the frontend or another worker writes), from the caching
  // allocator: a block comes back there once this storage's last reference,
  // and so its last queued op, is gone.
  data_ = cpu_cache::allocate(device.index, nbytes);
  if (!data_) fail("the system refused the allocation");
  memory::note_cpu_held(device.index, nbytes);
}

Storage::Storage(const std::shared_ptr<Storage>& base, std::size_t offset, std::size_t nbytes)
    : engine_id_(base->engine_id_), device_(base->device_), nbytes_(nbytes), owner_(base->owner_) {
  const std::size_t at = base->offset() + offset;
  if (offset > base->nbytes_ || nbytes > base->nbytes_ - offset)
    throw ShapeError("a view of bytes [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " +
                     std::to_string(nbytes) + ") passes the end of a storage of " + std::to_string(base->nbytes_) +
                     " bytes");
  base_ = base->is_view() ? base->base_ : base;
  data_ = static_cast<char*>(owner_->data_) + at;
}

Storage::~Storage() {
  if (base_) return;  // a view: the owner gives the memory back
  if (device_.is_cuda()) {
    backend::free(device_.index, data_, nbytes_);
    return;
  }
  cpu_cache::release(device_.index, data_, nbytes_);
  memory::note_cpu_released(device_.index, nbytes_);
}

void use_cuda_device(int device) {
  if (device < 0 || device >= cuda_device_count())
    throw DeviceError("cuda:" + std::to_string(device) + " is not a device of this process");
  backend::set_device(device);
}

void synchronize_cuda_device(int device) noexcept {
  if (device >= 0 && device < cuda_device_count()) backend::synchronize_device(device);
}

std::uint64_t cuda_memory_in_use(int device) {
  return backend::memory_used(device);
}

void empty_cuda_cache(int device) {
  if (device < 0 || device >= cuda_device_count())
    throw DeviceError("cuda:" + std::to_string(device) + " is not a device of this process");
  backend::empty_cache(device);
}

}  // namespace tide
