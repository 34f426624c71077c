// Device: where a storage lives and where an op runs ("cpu:0", "cuda:1").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace tide {

enum class DeviceKind : std::uint8_t { cpu = 0, cuda = 1 };

/// A value type naming one device. Cheap to copy, hashable, comparable.
struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  constexpr Device() = default;
  constexpr Device(DeviceKind k, int i) : kind(k), index(i) {}

  /// Parses "cpu", "cpu:1", "cuda:0". Throws tide::DeviceError on bad text.
  static Device parse(std::string_view text);

  constexpr bool is_cpu() const { return kind == DeviceKind::cpu; }
  constexpr bool is_cuda() const { return kind == DeviceKind::cuda; }
  std::string str() const;

  friend constexpr bool operator==(const Device&, const Device&) = default;
};

/// The most CPU devices an engine may have.
inline constexpr int kMaxCpuDevices = 64;

constexpr Device cpu(int index = 0) { return {DeviceKind::cpu, index}; }
constexpr Device cuda(int index = 0) { return {DeviceKind::cuda, index}; }

/// How many GPUs this process can use: 0 when tide was built without the
/// CUDA backend, when there is no driver or device, or on any CUDA error.
int cuda_device_count();
/// Whether this build has the CUDA backend.
bool cuda_built();
/// cuda:`device`'s UUID as 32 hex digits: the same physical GPU gives the
/// same text in every process, whatever CUDA_VISIBLE_DEVICES numbers it
/// (throws tide::DeviceError for a device this process does not have).
std::string cuda_device_uuid(int device);
/// Why several processes cannot share cuda:`device` (its compute mode is
/// exclusive-process or prohibited), or "" when they can (throws
/// tide::DeviceError for a device this process does not have).
std::string cuda_device_unshareable(int device);
/// Makes cuda:`device` the calling thread's current CUDA device (throws
/// tide::DeviceError without it).
void use_cuda_device(int device);
/// Waits until cuda:`device` has finished all work queued on it, by any
/// stream of this process (tide's or another library's); the calling
/// thread's current device is left as it was. Does nothing without the CUDA
/// backend or for a device this process does not have; never throws.
void synchronize_cuda_device(int device) noexcept;
/// Bytes held by live storages on cpu:`device`, in every engine of this
/// process (throws tide::DeviceError outside [0, kMaxCpuDevices)).
std::uint64_t cpu_memory_in_use(int device);
/// Bytes of cuda:`device`'s memory held by live storages, in whole blocks
/// (throws tide::DeviceError for a device this process does not have).
std::uint64_t cuda_memory_in_use(int device);
/// Gives the blocks cuda:`device` keeps for reuse (freed storages' memory,
/// cached by size class) back to the driver, as torch.cuda.empty_cache does;
/// live storages keep theirs. tide does this itself before it refuses an
/// allocation, and before a kernel's scratch memory runs out. Throws
/// tide::DeviceError for a device this process does not have.
void empty_cuda_cache(int device);

/// The streams every device has. Ops run on the compute stream unless a
/// StreamScope (or the op itself, like copy_to) picks another.
enum class StreamKind : std::uint8_t { compute = 0, copy = 1, comm = 2 };
inline constexpr int kStreamKinds = 3;
const char* stream_kind_name(StreamKind k);

}  // namespace tide

template <>
struct std::hash<tide::Device> {
  std::size_t operator()(const tide::Device& d) const noexcept {
    return (static_cast<std::size_t>(d.kind) << 16) ^ static_cast<std::size_t>(d.index);
  }
};
