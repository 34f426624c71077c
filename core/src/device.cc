#include <tide/core/device.h>

#include <charconv>

#include <tide/core/error.h>

namespace tide {

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
  return "?";
}

}  // namespace tide
