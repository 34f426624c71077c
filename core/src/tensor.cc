#include <tide/core/tensor.h>

#include <cstdio>
#include <cstring>
#include <iomanip>
#include <type_traits>
#include <ostream>
#include <sstream>

#include <tide/core/engine.h>

#include "engine_internal.h"

#include "backend.h"

namespace tide {

std::size_t tensor_bytes(const Shape& shape, DType dtype) {
  if (dtype != DType::f32 && dtype != DType::f64 && dtype != DType::i32 && dtype != DType::i64 &&
      dtype != DType::b8)
    throw DTypeError("dtype value " + std::to_string(static_cast<int>(dtype)) +
                     " is not f32, f64, i32, i64 or bool");
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(shape.numel(), static_cast<std::int64_t>(dtype_size(dtype)), &bytes))
    throw ShapeError("shape " + shape.str() + " of " + dtype_name(dtype) + " is too large: " +
                     std::to_string(shape.numel()) + " elements need more than 2^63 - 1 bytes");
  return static_cast<std::size_t>(bytes);
}

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype)
    : storage_(std::move(storage)), shape_(shape), dtype_(dtype) {
  const std::size_t need = tensor_bytes(shape_, dtype_);
  if (storage_ && storage_->nbytes() < need)
    throw ShapeError("storage of " + std::to_string(storage_->nbytes()) +
                     " bytes is too small for shape " + shape_.str());
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  Engine& e = current_engine();
  return Tensor(e.allocate(device, tensor_bytes(shape, dtype)), shape, dtype);
}

Device Tensor::device() const {
  check_defined("device");
  return storage_->device();
}

void Tensor::check_defined(const char* what) const {
  if (!storage_)
    throw UndefinedTensorError(std::string("use of an undefined tensor (in ") + what + ")");
}

Engine& Tensor::engine() const {
  check_defined("engine");
  Engine* e = current_engine_or_null();
  if (!e || e->id() != storage_->engine_id())
    throw UsageError("tensor belongs to an engine that is not the current one (destroyed, or "
                     "another runtime's)");
  return *e;
}

const Tensor& Tensor::wait_to_read(Loc loc) const {
  engine().wait_for(*storage_, "wait_to_read", loc);
  return *this;
}

const void* Tensor::read_host(const char* kind, Loc loc) const {
  Engine& e = engine();
  e.wait_for(*storage_, kind, loc);
  if (storage_->device().is_cpu()) return storage_->data();
  // A GPU tensor's bytes come to a host buffer of the frontend thread (the
  // one thread that may call blockers), valid until its next blocker.
  thread_local std::vector<unsigned char> host;
  host.resize(nbytes());
  backend::read_to_host(storage_->device().index, host.data(), storage_->data(), nbytes());
  return host.data();
}

namespace {

/// One element as numpy and PyTorch show it: 6 significant digits, and a
/// float always looks like one ("3." rather than "3").
template <typename T>
void print_value(std::ostream& os, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "True" : "False");
  } else if constexpr (std::is_floating_point_v<T>) {
    char buf[32];
    const int n = std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(v));
    os.write(buf, n);
    if (std::strpbrk(buf, ".eni") == nullptr) os << '.';  // not 1.5, 1e+10, nan or inf
  } else {
    os << +v;
  }
}

template <typename T>
void print_values(std::ostream& os, const T* p, const Shape& shape, int dim, std::int64_t& offset,
                  int indent) {
  constexpr std::int64_t kEdge = 3;  // elements shown at each end of a long axis
  if (shape.ndim() == 0) {
    print_value(os, p[0]);
    return;
  }
  std::int64_t n = shape[dim];
  std::int64_t inner = 1;
  for (int d = dim + 1; d < shape.ndim(); ++d) inner *= shape[d];
  os << "[";
  for (std::int64_t i = 0; i < n; ++i) {
    if (n > 2 * kEdge && i == kEdge) {
      os << (dim + 1 == shape.ndim() ? "..., " : "...,\n" + std::string(static_cast<std::size_t>(indent + 1), ' '));
      offset += (n - 2 * kEdge) * inner;
      i = n - kEdge - 1;
      continue;
    }
    if (dim + 1 == shape.ndim()) {
      print_value(os, p[offset++]);
    } else {
      print_values(os, p, shape, dim + 1, offset, indent + 1);
    }
    if (i + 1 < n) os << (dim + 1 == shape.ndim() ? ", " : ",\n" + std::string(static_cast<std::size_t>(indent + 1), ' '));
  }
  os << "]";
}

}  // namespace

std::ostream& operator<<(std::ostream& os, Printed printed) {
  const Tensor& t = printed.t;
  if (!t.defined()) return os << "tensor(undefined)";
  const void* p = t.read_host("print", printed.loc);
  std::ostringstream body;
  body << std::setprecision(6);
  std::int64_t offset = 0;
  dispatch_dtype_or_bool(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    print_values(body, static_cast<const T*>(p), t.shape(), 0, offset, 7);
  });
  return os << "tensor(" << body.str() << ", shape=" << t.shape().str()
            << ", dtype=" << dtype_name(t.dtype()) << ", device=" << t.device().str() << ")";
}

}  // namespace tide
