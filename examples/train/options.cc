#include "options.h"

#include <charconv>
#include <stdexcept>

namespace tide::train {

std::vector<std::int64_t> parse_widths(const std::string& text) {
  auto bad = [&](const std::string& what) {
    throw std::invalid_argument("'" + text + "': " + what + " (give widths like 512,256)");
  };
  if (text.empty()) bad("no width given");
  std::vector<std::int64_t> widths;
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = text.find(',', from);
    const std::string piece = text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    const std::string which = "width " + std::to_string(widths.size() + 1);
    if (piece.empty()) bad(which + " is empty");
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), v);
    if (ec == std::errc::result_out_of_range) bad(which + " (" + piece + ") is too large");
    if (ec != std::errc() || end != piece.data() + piece.size()) bad(which + " (" + piece + ") is not a whole number");
    if (v < 1) bad(which + " (" + piece + ") must be at least 1");
    widths.push_back(v);
    if (comma == std::string::npos) return widths;
    from = comma + 1;
  }
}

}  // namespace tide::train
