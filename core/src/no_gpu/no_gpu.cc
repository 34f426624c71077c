// The GPU backend of a build without one (no CUDA toolkit found): no
// devices. Core asks device_count() before it makes anything on a GPU, so
// in a run these calls are reached only through a public call that names a
// GPU outright; they throw tide::DeviceError saying why.
#include <string>

#include <tide/core/error.h>

#include "../backend.h"

namespace tide::backend {

namespace {
[[noreturn]] void not_built(const std::string& what) {
  throw DeviceError(what + ": tide was built without the CUDA backend");
}
std::string gpu(int device) { return cuda(device).str(); }
}  // namespace

bool built() { return false; }
void range_push(const char*) noexcept {}
void range_pop() noexcept {}
int device_count() { return 0; }
bool clock_report(int, ClockReport&) { return false; }
std::string device_uuid(int device) { not_built(gpu(device)); }
std::string device_unshareable(int device) { not_built(gpu(device)); }
void set_device(int device) { not_built(gpu(device)); }

DeviceGuard::DeviceGuard(int device, bool) { not_built(gpu(device)); }
DeviceGuard::~DeviceGuard() = default;

void* alloc(int device, std::size_t) { not_built("cannot allocate on " + gpu(device)); }
void free(int, void*, std::size_t) noexcept {}
void empty_cache(int) noexcept {}
void synchronize_device(int) noexcept {}
std::uint64_t memory_used(int device) { not_built(gpu(device)); }

void copy(void*, Device dst_dev, void*, Device src_dev, const void*, std::size_t) {
  throw DeviceError("a copy between " + src_dev.str() + " and " + dst_dev.str() +
                    " needs the CUDA backend, which this build lacks");
}
void read_to_host(int device, void*, const void*, std::size_t) { not_built("reading " + gpu(device) + "'s memory"); }

void* shared_stream(int device, StreamKind) { not_built(gpu(device)); }
void sync_stream(void*) { not_built("waiting for a GPU stream"); }
bool sync_mode() { return false; }

std::unique_ptr<Lane> make_lane(int device, StreamKind) { not_built("a stream on " + gpu(device)); }

}  // namespace tide::backend
