// Tensor: a cheap handle (shared storage + shape + dtype). Ops on tensors
// return at once; values reach the frontend only through the blockers below.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <vector>

#include <tide/core/device.h>
#include <tide/core/dtype.h>
#include <tide/core/error.h>
#include <tide/core/loc.h>
#include <tide/core/shape.h>
#include <tide/core/storage.h>

namespace tide {

class Engine;
class Tensor;
struct AutogradMeta;  // <tide/core/autograd.h>

/// What `os << t` takes: converting the tensor to it captures the caller's
/// source location, so printing (an implicit blocker) is counted at the
/// line that prints.
struct Printed {
  const Tensor& t;
  Loc loc;
  Printed(const Tensor& tensor, Loc l = Loc::current())  // NOLINT: implicit
      : t(tensor), loc(l) {}
};

/// Bytes of a tensor of `shape` and `dtype`: tide::ShapeError naming both
/// when they pass 2^63 - 1, tide::DTypeError for a value that is no DType.
std::size_t tensor_bytes(const Shape& shape, DType dtype);

class Tensor {
 public:
  /// An undefined tensor: any use throws tide::UndefinedTensorError.
  Tensor() = default;
  Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype);

  /// Uninitialised storage on `device` of the current engine (no op queued).
  /// Throws tide::OutOfMemoryError when the device cannot hold it.
  static Tensor empty(const Shape& shape, DType dtype, Device device = cpu(0));

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  Device device() const;
  int ndim() const { return shape_.ndim(); }
  std::int64_t numel() const { return shape_.numel(); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  /// True when both handles' bytes lie in one block of memory: one storage,
  /// or views of one (whether or not their elements overlap).
  bool is_same(const Tensor& o) const {
    return storage_ == o.storage_ || (storage_ && o.storage_ && storage_->owner() == o.storage_->owner());
  }

  /// Barrier: blocks until the ops producing this tensor have run (not the
  /// unrelated work queued elsewhere); rethrows their error, if any.
  const Tensor& wait_to_read(Loc loc = Loc::current()) const;

  /// Implicit blocker: the single element converted to T (numel must be 1).
  template <typename T>
  T item(Loc loc = Loc::current()) const;

  /// Implicit blocker: all elements, row-major, converted to T.
  template <typename T>
  std::vector<T> to_vector(Loc loc = Loc::current()) const;

  // Automatic differentiation (<tide/core/autograd.h>, <tide/ops/autograd.h>).

  /// Whether gradients flow to this tensor: a leaf marked so, or the result
  /// of an op recorded while one of its inputs required them.
  bool requires_grad() const;
  /// Marks a leaf (or unmarks it); throws tide::UsageError on a tensor made
  /// by a recorded op (use detach() first) and tide::DTypeError for i32.
  /// Copies of this handle made afterwards share the mark and the gradient.
  Tensor& set_requires_grad(bool on = true);
  /// True for a tensor no recorded op made (whether or not it requires grad).
  bool is_leaf() const;
  /// A leaf's accumulated gradient; undefined until a backward reaches it.
  Tensor grad() const;
  /// Replaces a leaf's gradient (an undefined tensor clears it, as
  /// zero_grad does); g must have this tensor's shape, dtype and device.
  void set_grad(const Tensor& g);
  /// The same storage, shape and dtype, outside any graph: no op on it is
  /// recorded (it shares the values, so an in-place op on it is seen here).
  Tensor detach() const;
  const std::shared_ptr<AutogradMeta>& autograd_meta() const { return autograd_; }
  void set_autograd_meta(std::shared_ptr<AutogradMeta> m) { autograd_ = std::move(m); }

  /// Throws tide::UndefinedTensorError when undefined, tide::UsageError when
  /// its engine is not the current one.
  Engine& engine() const;
  void check_defined(const char* what) const;

 private:
  friend std::ostream& operator<<(std::ostream& os, Printed p);
  /// Waits for the producers and returns the host bytes (CPU storage).
  const void* read_host(const char* kind, Loc loc) const;

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  DType dtype_ = DType::f32;
  std::shared_ptr<AutogradMeta> autograd_;
};

/// Implicit blocker: prints values, shape, dtype and device (`os << t`).
std::ostream& operator<<(std::ostream& os, Printed p);

template <typename T>
T Tensor::item(Loc loc) const {
  check_defined("item");
  if (numel() != 1)
    throw ShapeError("item() needs a tensor of one element, got shape " + shape_.str());
  const void* p = read_host("item", loc);
  return dispatch_dtype_or_bool(dtype_, [&](auto tag) -> T {
    using S = decltype(tag);
    return static_cast<T>(*static_cast<const S*>(p));
  });
}

template <typename T>
std::vector<T> Tensor::to_vector(Loc loc) const {
  check_defined("to_vector");
  const void* p = read_host("to_vector", loc);
  std::vector<T> out(static_cast<std::size_t>(numel()));
  dispatch_dtype_or_bool(dtype_, [&](auto tag) {
    using S = decltype(tag);
    const S* src = static_cast<const S*>(p);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(src[i]);
  });
  return out;
}

}  // namespace tide
