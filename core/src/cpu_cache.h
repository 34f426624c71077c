// The caching allocator behind CPU storages (internal to core/).
#pragma once

#include <cstddef>

namespace tide::cpu_cache {

/// The block size a request of `nbytes` gets: whole cache lines up to 1 KiB,
/// then four classes per power of two (at most a quarter more than asked).
std::size_t class_size(std::size_t nbytes);

/// A 64-byte aligned block of class_size(nbytes) on cpu:`device`, from the
/// cache or the system; nullptr when the system refuses even after the
/// cache is emptied.
void* allocate(int device, std::size_t nbytes);
/// Gives back a block allocate(device, nbytes) returned.
void release(int device, void* block, std::size_t nbytes);

}  // namespace tide::cpu_cache
