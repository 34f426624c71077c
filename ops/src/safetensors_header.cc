#include "safetensors_header.h"

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include <tide/core/error.h>

namespace tide::detail {

namespace {

using nlohmann::json;

// A header is an object (depth 0) of entries and metadata (1) whose fields
// (2) hold at most arrays of numbers (3): anything deeper is not one.
constexpr int kMaxDepth = 3;

[[noreturn]] void malformed(const std::string& path, const std::string& what) {
  throw FileError("tide::load: " + path + ": " + what);
}

std::string bytes_text(std::uint64_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

/// A non-negative integer of the JSON (not a float, not a negative number).
std::uint64_t whole_number(const json& v, const std::string& path, const std::string& field) {
  if (!v.is_number_unsigned()) malformed(path, field + " is " + v.dump() + ", not a whole number 0 or more");
  return v.get<std::uint64_t>();
}

StEntry parse_entry(const std::string& name, const json& v, const std::string& path) {
  const std::string where = "tensor '" + name + "'";
  if (!v.is_object()) malformed(path, where + " is " + std::string(v.type_name()) + ", not an object");
  for (const auto& [key, _] : v.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      malformed(path, where + " has the field '" + key + "' (expected dtype, shape and data_offsets)");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) malformed(path, where + " has no '" + key + "'");
  StEntry e;
  e.name = name;
  const json& dtype = v["dtype"];
  if (!dtype.is_string()) malformed(path, where + ": its dtype is " + dtype.dump() + ", not a string");
  e.dtype = dtype.get<std::string>();
  const std::size_t item = st_dtype_size(e.dtype);
  if (item == 0) malformed(path, where + " has the dtype '" + e.dtype + "', which is no safetensors dtype");
  const json& shape = v["shape"];
  if (!shape.is_array()) malformed(path, where + ": its shape is " + shape.dump() + ", not an array");
  std::uint64_t numel = 1;
  bool too_big = false, empty = false;  // the product overflows; an extent is 0
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const std::uint64_t d = whole_number(shape[i], path, where + ": extent " + std::to_string(i) + " of its shape");
    if (d > static_cast<std::uint64_t>(INT64_MAX)) malformed(path, where + ": its shape " + shape.dump() + " is too large");
    e.shape.push_back(static_cast<std::int64_t>(d));
    empty = empty || d == 0;
    too_big = too_big || __builtin_mul_overflow(numel, d, &numel);
  }
  const json& offsets = v["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    malformed(path, where + ": its data_offsets are " + offsets.dump() + ", not [begin, end]");
  e.begin = whole_number(offsets[0], path, where + ": the begin of its data_offsets");
  e.end = whole_number(offsets[1], path, where + ": the end of its data_offsets");
  if (e.end < e.begin)
    malformed(path, where + ": its data_offsets " + offsets.dump() + " end before they begin");
  std::uint64_t nbytes = 0;
  too_big = too_big || __builtin_mul_overflow(numel, item, &nbytes);
  // A zero extent makes the product 0 whatever the others hold.
  if (empty) {
    too_big = false;
    nbytes = 0;
  }
  if (too_big || nbytes != e.end - e.begin)
    malformed(path, where + ": its shape " + shape.dump() + " of " + e.dtype + " needs " +
                        (too_big ? std::string("more than 2^64 bytes") : bytes_text(nbytes)) +
                        ", its data_offsets " + offsets.dump() + " hold " + bytes_text(e.end - e.begin));
  return e;
}

std::map<std::string, std::string> parse_metadata(const json& v, const std::string& path) {
  if (!v.is_object()) malformed(path, "__metadata__ is " + std::string(v.type_name()) + ", not an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string())
      malformed(path, "__metadata__['" + key + "'] is " + value.dump() + ", not a string");
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

/// The entries sorted by their bytes must tile [0, data_bytes) exactly.
void check_tiling(std::vector<StEntry>& entries, std::uint64_t data_bytes, const std::string& path) {
  std::sort(entries.begin(), entries.end(),
            [](const StEntry& a, const StEntry& b) { return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name); });
  std::uint64_t at = 0;
  const StEntry* prev = nullptr;
  for (const StEntry& e : entries) {
    if (e.begin < at)
      malformed(path, "tensor '" + e.name + "' begins at byte " + std::to_string(e.begin) + ", inside tensor '" +
                          prev->name + "' (bytes " + std::to_string(prev->begin) + " to " + std::to_string(prev->end) +
                          "): their data_offsets overlap");
    if (e.begin > at)
      malformed(path, "bytes " + std::to_string(at) + " to " + std::to_string(e.begin) +
                          " of the data belong to no tensor (a gap before tensor '" + e.name + "')");
    if (e.end > data_bytes)
      malformed(path, "tensor '" + e.name + "' ends at byte " + std::to_string(e.end) + ", past the end of the data (" +
                          bytes_text(data_bytes) + " after the header): the file is truncated");
    at = e.end;
    prev = &e;
  }
  if (at != data_bytes)
    malformed(path, bytes_text(data_bytes - at) + " after the last tensor's data belong to no tensor (the data is " +
                        bytes_text(data_bytes) + ", the tensors end at byte " + std::to_string(at) + ")");
}

}  // namespace

std::size_t st_dtype_size(std::string_view dtype) {
  static constexpr std::array<std::pair<std::string_view, std::size_t>, 15> kSizes{{
      {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1},
      {"I16", 2}, {"U16", 2}, {"F16", 2}, {"BF16", 2},
      {"I32", 4}, {"U32", 4}, {"F32", 4},
      {"I64", 8}, {"U64", 8}, {"F64", 8},
  }};
  for (const auto& [name, size] : kSizes)
    if (name == dtype) return size;
  return 0;
}

std::string encode_header(const std::vector<StEntry>& entries, const std::map<std::string, std::string>& metadata,
                          const std::string& path) {
  json h = json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  for (const StEntry& e : entries)
    h[e.name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {e.begin, e.end}}};
  std::string text;
  try {
    text = h.dump();
  } catch (const json::type_error& ex) {
    throw ValueError("tide::save: " + path + ": a tensor name or metadata text is not UTF-8 (" + ex.what() + ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  return out + text;
}

std::uint64_t header_size(const unsigned char* first8, std::uint64_t file_bytes, const std::string& path) {
  if (file_bytes < 8)
    malformed(path, "the file is " + bytes_text(file_bytes) + " long, too short for the 8-byte header size of a "
                    "safetensors file");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | first8[i];
  if (n > kMaxHeaderBytes)
    malformed(path, "the header size is " + bytes_text(n) + ", more than the limit of " + bytes_text(kMaxHeaderBytes) +
                    " (not a safetensors file?)");
  if (n > file_bytes - 8)
    malformed(path, "the header size is " + bytes_text(n) + ", past the end of the file (" + bytes_text(file_bytes) +
                    "): not a safetensors file, or a truncated one");
  return n;
}

StHeader parse_header(std::string_view text, std::uint64_t data_bytes, const std::string& path) {
  // Checked as it is parsed: the depth (a deep nesting is refused before it
  // is built) and names given twice (JSON would keep the last silently).
  std::array<std::set<std::string>, kMaxDepth + 2> keys;
  auto check = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxDepth) malformed(path, "the header nests deeper than a safetensors header does");
    if (event == json::parse_event_t::object_start) keys[static_cast<std::size_t>(depth) + 1].clear();
    if (event == json::parse_event_t::key && !keys[static_cast<std::size_t>(depth)].insert(parsed.get<std::string>()).second)
      malformed(path, "the header names '" + parsed.get<std::string>() + "' twice" +
                          (depth == 1 ? "" : " in one entry"));
    return true;
  };
  json h;
  try {
    h = json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& ex) {
    malformed(path, std::string("the header is not valid JSON: ") + ex.what());
  }
  if (!h.is_object()) malformed(path, "the header is " + std::string(h.type_name()) + ", not a JSON object");
  StHeader out;
  for (const auto& [name, value] : h.items()) {
    if (name == "__metadata__")
      out.metadata = parse_metadata(value, path);
    else if (name.empty())
      malformed(path, "a tensor has an empty name");
    else
      out.entries.push_back(parse_entry(name, value, path));
  }
  check_tiling(out.entries, data_bytes, path);
  return out;
}

}  // namespace tide::detail
