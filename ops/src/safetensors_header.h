// The JSON header of a safetensors file (tide/ops/safetensors.h): written
// and read with nlohmann-json, every field of a header read back checked.
// No tensors here: save/load (safetensors.cc) turn entries into tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tide::detail {

/// A header larger than this is refused before it is read (the limit of the
/// `safetensors` package's own reader).
inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

/// One tensor's entry: its bytes are [begin, end) of the data that follows
/// the header.
struct StEntry {
  std::string name;
  std::string dtype;  // as in the file: "F32", "BF16", ...
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;
};

struct StHeader {
  std::map<std::string, std::string> metadata;
  std::vector<StEntry> entries;  // in the order of their bytes
};

/// Bytes per element of a safetensors dtype ("F32": 4, "BF16": 2, "BOOL": 1,
/// ...), 0 for a string that is no safetensors dtype.
std::size_t st_dtype_size(std::string_view dtype);

/// The file's first bytes: the 8-byte size, then the JSON of `entries` and
/// `metadata` (omitted when empty), padded with spaces to a multiple of 8.
/// Throws tide::ValueError naming `path` for a name or metadata text that is
/// not UTF-8.
std::string encode_header(const std::vector<StEntry>& entries, const std::map<std::string, std::string>& metadata,
                          const std::string& path);

/// The header size that the first 8 bytes of a file give, checked against
/// the file's size and kMaxHeaderBytes. Throws tide::FileError naming `path`.
std::uint64_t header_size(const unsigned char* first8, std::uint64_t file_bytes, const std::string& path);

/// Parses and checks `json`, the header of a file whose data (what follows
/// the header) is `data_bytes` long. Throws tide::FileError naming `path`
/// and the field for anything malformed; dtypes are only checked to be
/// safetensors dtypes (which of them tide takes is load()'s business).
StHeader parse_header(std::string_view json, std::uint64_t data_bytes, const std::string& path);

}  // namespace tide::detail
