// Small value types: dtype names, shapes, errors, policies.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>

#include <tide/core/dtype.h>
#include <tide/core/error.h>
#include <tide/core/shape.h>
#include <tide/core/sync_policy.h>

#include "memory.h"

namespace tide {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::b8: return "bool";
  }
  return "?";
}

void throw_no_bool() {
  throw DTypeError("this op takes numbers (f32, f64, i32 or i64), not a bool tensor: convert it first "
                   "(to_dtype(t, DType::i32), in Python t.int())");
}

Shape::Shape(std::initializer_list<std::int64_t> dims) {
  for (auto d : dims) append(d);
  validate();
}

void Shape::push_back(std::int64_t d) {
  append(d);
  validate();
}

void Shape::append(std::int64_t d) {
  if (ndim_ == kMaxDims)
    throw ShapeError("shape " + str() + " cannot take another extent: at most " + std::to_string(kMaxDims) +
                     " dimensions");
  dims_[static_cast<std::size_t>(ndim_++)] = d;
}

// Zero extents are left out of the product: a shape like [0, 2^40, 2^40]
// has no elements, but its strides would still overflow.
void Shape::validate() const {
  std::int64_t product = 1;
  for (int i = 0; i < ndim_; ++i) {
    const std::int64_t d = dims_[static_cast<std::size_t>(i)];
    if (d < 0) throw ShapeError("shape " + str() + " has a negative extent (" + std::to_string(d) + ")");
    if (d > 0 && __builtin_mul_overflow(product, d, &product))
      throw ShapeError("shape " + str() + " is too large: its nonzero extents multiply past 2^63 - 1");
  }
}

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (int i = 0; i < ndim_; ++i) n *= dims_[static_cast<std::size_t>(i)];
  return n;
}

Shape Shape::without(int axis) const {
  Shape s;
  for (int i = 0; i < ndim_; ++i)
    if (i != axis) s.push_back(dims_[static_cast<std::size_t>(i)]);
  return s;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < ndim_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[static_cast<std::size_t>(i)]);
  }
  return s + "]";
}

static std::string describe(const OpProvenance& p) {
  std::ostringstream os;
  os << "op '" << p.op << "' failed on " << p.stream << " (step " << p.step << ", seq " << p.seq
     << "), pushed at " << p.call_site << ": " << p.what;
  return os.str();
}

BackendError::BackendError(std::shared_ptr<const OpProvenance> p)
    : Error(describe(*p)), prov_(std::move(p)) {}

std::string format_call_site(const Loc& loc) {
  std::string file = loc.file_name();
  if (file.empty() && loc.line() == 0) return "unknown call site";
  return file + ":" + std::to_string(loc.line()) + " (" + loc.function_name() + ")";
}

std::uint64_t SyncPolicy::default_max_queued_host_bytes() {
  static const std::uint64_t cap = std::min<std::uint64_t>(memory::host_memory_bytes() / 64, 256ull << 20);
  return cap;
}

std::uint64_t SyncPolicy::default_streaming_op_bytes() {
  static const std::uint64_t bytes = [] {
    const long l2 = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l2 <= 0) return std::uint64_t{1} << 20;
    return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(l2), 256u << 10, 2u << 20);
  }();
  return bytes;
}

std::uint64_t SyncPolicy::default_max_streaming_host_bytes() { return 2 * default_streaming_op_bytes(); }

std::uint64_t SyncPolicy::default_inline_op_bytes() {
  // Read once; a bad value is refused at every policy made from the defaults
  // (the static is not set while its initializer throws).
  static const std::uint64_t bytes = [] {
    if (const auto kb = memory::whole_number_env("TIDE_INLINE_OP_KB", "KiB (0: every op goes to its worker)"))
      return *kb << 10;
    return default_max_streaming_host_bytes();
  }();
  return bytes;
}

void SyncPolicy::validate() const {
  if (!(low_water > 0.0 && low_water <= 1.0) || std::isnan(low_water))
    throw PolicyError("SyncPolicy.low_water must be in (0, 1], got " + std::to_string(low_water));
  if (max_inflight_steps > (1u << 20))
    throw PolicyError("SyncPolicy.max_inflight_steps is absurdly large: " +
                      std::to_string(max_inflight_steps));
}

std::string SyncPolicy::str() const {
  auto cap = [](std::uint64_t v) { return v == 0 ? std::string("unbounded") : std::to_string(v); };
  std::ostringstream os;
  os << "steps in flight " << (max_inflight_steps ? std::to_string(max_inflight_steps) : "unbounded")
     << ", queued ops " << cap(max_queued_ops) << ", unlaunched ops per GPU stream " << cap(max_unlaunched_gpu_ops)
     << ", queued bytes " << cap(max_queued_bytes)
     << ", queued host bytes " << cap(max_queued_host_bytes)
     << ", streaming host bytes " << cap(max_streaming_host_bytes) << " (ops writing at most "
     << streaming_op_bytes << ")"
     << ", inline ops up to " << inline_op_bytes << " bytes"
     << ", low water " << low_water;
  return os.str();
}

}  // namespace tide
