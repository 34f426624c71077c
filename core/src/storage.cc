#include <tide/core/storage.h>

#include <cstdlib>
#include <new>

namespace tide {

// CPU memory: 64-byte aligned so kernels may use aligned vector loads. Freed
// by whoever drops the last reference; queued ops hold one, so a block is
// never released before its last use has completed.
Storage::Storage(std::uint64_t engine_id, Device device, std::size_t nbytes)
    : engine_id_(engine_id), device_(device), nbytes_(nbytes) {
  // Whole cache lines: a worker writing one storage never shares a line
  // with anything the frontend or another worker writes.
  std::size_t rounded = (nbytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  data_ = std::aligned_alloc(64, rounded);
  if (!data_) throw std::bad_alloc();
}

Storage::~Storage() { std::free(data_); }

}  // namespace tide
