// Named tensors to and from files in the safetensors layout, which PyTorch
// (safetensors.torch), numpy (safetensors.numpy) and others read and write:
// an 8-byte little-endian header size N, N bytes of JSON
//   {"__metadata__": {string: string}, NAME: {"dtype", "shape", "data_offsets": [begin, end]}, ...}
// padded with spaces to a multiple of 8, then every tensor's bytes,
// row-major and little-endian, back to back.
//
// Each tensor keeps its own dtype: f32, f64, i32, i64 and bool are written
// and read as F32, F64, I32, I64 and BOOL (a byte each; a nonzero byte reads
// as true); any other dtype (BF16, F16, U8, ...) is refused, since tide has
// no such tensors. Tensors are always contiguous
// (tide has no views), so a tensor's bytes are its storage's.
#pragma once

#include <map>
#include <string>

#include <tide/core/device.h>
#include <tide/core/loc.h>
#include <tide/core/tensor.h>

namespace tide {

/// What a safetensors file holds: its tensors by name, and the string pairs
/// of its "__metadata__" (empty when it has none).
struct SavedTensors {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// Writes `tensors` (by name; their bytes in name order) and `metadata` to
/// `path` atomically: to PATH.tmp.TID first (the writing thread's id), fsync'd, renamed over `path`,
/// then the directory fsync'd, so a crash leaves the old file or the new
/// one, never a part of either. The directory must exist.
///
/// A blocker: waits for the ops producing each tensor (counted at `loc`);
/// a tensor on a GPU is copied to the host first. Throws tide::ValueError,
/// before writing anything, for an empty name, the name "__metadata__", an
/// undefined tensor, or text that is not UTF-8 (JSON's encoding); tide::
/// FileError naming the file and the errno text when a write step fails
/// (the temporary file is then removed). Call it from the frontend thread,
/// like every blocker.
void save(const std::string& path, const std::map<std::string, Tensor>& tensors,
          const std::map<std::string, std::string>& metadata = {}, Loc loc = Loc::current());

/// Reads a safetensors file into tensors on `device` (each an op, like
/// from_vector: the call returns once the file is read and the copies are
/// queued). Every field is checked before anything is allocated: the header
/// size against the file, the JSON's shape (an object of tensor entries with
/// exactly "dtype", "shape" and "data_offsets", and a "__metadata__" of
/// strings), each shape against its byte range, the ranges covering the
/// data exactly (from 0, no overlap, no gap, nothing after the last).
/// Throws tide::FileError naming the file and the field for a file that
/// cannot be read or is malformed; tide::DTypeError naming the tensor and
/// its dtype for a dtype tide has no tensors of (BF16, F16, ...).
SavedTensors load(const std::string& path, Device device = cpu(0), Loc loc = Loc::current());

/// The metadata of a safetensors file, checked as load() checks the whole
/// header, without reading the tensors' bytes. Needs no engine.
std::map<std::string, std::string> load_metadata(const std::string& path);

}  // namespace tide
