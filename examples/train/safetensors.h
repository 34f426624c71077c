// The safetensors layout, which PyTorch, numpy and others read through the
// `safetensors` package: an 8-byte little-endian header size N, N bytes of
// JSON ({"__metadata__": {string: string}, name: {"dtype", "shape",
// "data_offsets": [begin, end]}}, padded with spaces to a multiple of 8),
// then the tensors' bytes, little-endian. tide writes f64 ("F64") only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tide::train {

struct StTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<double> values;  // as many as the shape holds
};

struct StFile {
  std::map<std::string, std::string> metadata;
  std::vector<StTensor> tensors;  // in the order of their bytes
};

/// The file's bytes. Throws std::invalid_argument for a tensor whose shape
/// does not hold its values, or a name given twice or empty.
std::string encode_safetensors(const StFile& f);

/// Reads bytes written by encode_safetensors (or any safetensors file of F64
/// tensors). Throws std::runtime_error starting with `path` for anything
/// malformed: a header size past the file, JSON it cannot parse, a dtype
/// other than F64, a shape that does not match its byte range, ranges that
/// overlap, leave gaps or run past the file, more than a million JSON values
/// or an array of more than 64. Sizes are checked against the file before
/// anything is allocated.
StFile decode_safetensors(const std::string& bytes, const std::string& path);

}  // namespace tide::train
