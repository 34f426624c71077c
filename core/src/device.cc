#include <tide/core/device.h>

#include <atomic>
#include <charconv>

#include <tide/core/assert.h>
#include <tide/core/error.h>

#include "backend.h"

namespace tide {

namespace {
std::atomic<int> g_process_rank{-1};
}

void set_process_rank(int rank) { g_process_rank.store(rank, std::memory_order_relaxed); }
int process_rank() { return g_process_rank.load(std::memory_order_relaxed); }

bool cuda_built() { return backend::built(); }

int cuda_device_count() { return backend::device_count(); }

std::string cuda_device_uuid(int device) {
  if (device < 0 || device >= cuda_device_count())
    throw DeviceError("cuda:" + std::to_string(device) + " is not a device of this process");
  return backend::device_uuid(device);
}

std::string cuda_device_unshareable(int device) {
  if (device < 0 || device >= cuda_device_count())
    throw DeviceError("cuda:" + std::to_string(device) + " is not a device of this process");
  return backend::device_unshareable(device);
}

Device Device::parse(std::string_view text) {
  DeviceKind kind;
  std::string_view rest;
  if (text.starts_with("cpu")) {
    kind = DeviceKind::cpu;
    rest = text.substr(3);
  } else if (text.starts_with("cuda")) {
    kind = DeviceKind::cuda;
    rest = text.substr(4);
  } else {
    throw DeviceError("bad device '" + std::string(text) + "': expected cpu[:N] or cuda[:N]");
  }
  if (rest.empty()) return {kind, 0};
  int index = -1;
  if (rest[0] == ':') {
    auto [p, ec] = std::from_chars(rest.data() + 1, rest.data() + rest.size(), index);
    if (ec == std::errc() && p == rest.data() + rest.size() && index >= 0) return {kind, index};
  }
  throw DeviceError("bad device '" + std::string(text) + "': expected cpu[:N] or cuda[:N]");
}

std::string Device::str() const {
  return std::string(is_cpu() ? "cpu:" : "cuda:") + std::to_string(index);
}

const char* stream_kind_name(StreamKind k) {
  switch (k) {
    case StreamKind::compute: return "compute";
    case StreamKind::copy: return "copy";
    case StreamKind::comm: return "comm";
  }
  TIDE_UNREACHABLE("stream_kind_name: not a StreamKind");
}

}  // namespace tide
