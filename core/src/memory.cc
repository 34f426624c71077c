#include "memory.h"

#include <sys/sysinfo.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include <tide/core/error.h>

namespace tide::memory {

namespace {
std::array<std::atomic<std::uint64_t>, kMaxCpuDevices> g_cpu_held{};
}

std::string format_bytes(std::uint64_t n) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return std::to_string(n) + " bytes (" + buf + ")";
}

std::optional<std::uint64_t> whole_number_env(const char* name, const char* what) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*end || v[0] == '-' || n > (1ull << 40))
    throw ValueError(std::string(name) + "=" + v + ": expected a whole number of " + what);
  return std::uint64_t{n};
}

std::uint64_t host_memory_bytes() {
  static const std::uint64_t bytes = [] {
    struct sysinfo info {};
    if (sysinfo(&info) != 0) return UINT64_MAX;
    const std::uint64_t unit = info.mem_unit ? info.mem_unit : 1;
    return (static_cast<std::uint64_t>(info.totalram) + info.totalswap) * unit;
  }();
  return bytes;
}

void note_cpu_held(int index, std::uint64_t nbytes) {
  g_cpu_held[static_cast<std::size_t>(index)].fetch_add(nbytes, std::memory_order_relaxed);
}

void note_cpu_released(int index, std::uint64_t nbytes) {
  g_cpu_held[static_cast<std::size_t>(index)].fetch_sub(nbytes, std::memory_order_relaxed);
}

std::uint64_t cpu_held_total() {
  std::uint64_t n = 0;
  for (const auto& held : g_cpu_held) n += held.load(std::memory_order_relaxed);
  return n;
}

void throw_out_of_memory(Device device, std::uint64_t requested, std::uint64_t in_use, const std::string& why,
                         const std::string& note) {
  throw OutOfMemoryError("out of memory on " + device.str() + ": cannot allocate " + format_bytes(requested) +
                             " (" + why + "); tide's storages hold " + format_bytes(in_use) + " on " +
                             device.str() + " now" + (note.empty() ? "" : " (" + note + ")"),
                         device, requested, in_use);
}

}  // namespace tide::memory

namespace tide {

std::uint64_t cpu_memory_in_use(int device) {
  if (device < 0 || device >= kMaxCpuDevices)
    throw DeviceError("cpu:" + std::to_string(device) + " is not a CPU device (at most " +
                      std::to_string(kMaxCpuDevices) + ")");
  return memory::g_cpu_held[static_cast<std::size_t>(device)].load(std::memory_order_relaxed);
}

}  // namespace tide
