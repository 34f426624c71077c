// Errors. User mistakes are exceptions thrown on the frontend before anything
// is enqueued; failures of async work are BackendError, rethrown at barriers.
#pragma once

#include <cstdint>
#include <memory>
#include <tide/core/loc.h>
#include <stdexcept>
#include <string>

#include <tide/core/device.h>

namespace tide {

/// Base of every error tide throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ShapeError : public Error { using Error::Error; };
class DTypeError : public Error { using Error::Error; };
class DeviceError : public Error { using Error::Error; };
/// Use of a default-constructed (undefined) Tensor, or of a tensor whose
/// engine has been destroyed.
class UndefinedTensorError : public Error { using Error::Error; };
class PolicyError : public Error { using Error::Error; };
class ValueError : public Error { using Error::Error; };
/// An engine used wrongly: no active runtime, a push from a second thread...
class UsageError : public Error { using Error::Error; };
/// A file tide cannot read or write, or one that is not what it should be
/// (a damaged or foreign safetensors file): the message names the file and
/// what is wrong with it.
class FileError : public Error { using Error::Error; };

/// An allocation the device could not satisfy, thrown by the call that
/// allocates (before it enqueues anything). The message names the bytes
/// asked for, the device and what tide's storages hold there now.
class OutOfMemoryError : public Error {
 public:
  OutOfMemoryError(const std::string& what, Device device, std::uint64_t requested, std::uint64_t in_use)
      : Error(what), device_(device), requested_(requested), in_use_(in_use) {}
  Device device() const { return device_; }
  std::uint64_t requested_bytes() const { return requested_; }
  /// Bytes held by live storages on device() when the allocation failed.
  std::uint64_t in_use_bytes() const { return in_use_; }

 private:
  Device device_;
  std::uint64_t requested_;
  std::uint64_t in_use_;
};

/// A failing CUDA or cuBLAS call: the message names the call, file:line, the
/// library's error string and the rank. Sticky errors (an illegal address, a
/// failed launch...) leave the process's CUDA context unusable.
class CudaError : public Error {
 public:
  CudaError(const std::string& what, int code, bool sticky) : Error(what), code_(code), sticky_(sticky) {}
  int code() const { return code_; }
  bool sticky() const { return sticky_; }

 private:
  int code_;
  bool sticky_;
};

/// The rank named in error messages: set by the Runtime (-1 until then).
void set_process_rank(int rank);
int process_rank();

/// Where an async failure came from.
struct OpProvenance {
  std::string op;          // op name, e.g. "div"
  std::string stream;      // e.g. "cpu:1/compute"
  std::uint64_t step = 0;  // minibatch index when pushed
  std::uint64_t seq = 0;   // position on its stream
  std::string call_site;   // "file:line (function)" of the frontend call
  std::string what;        // the original exception's message
};

/// A failure of an op on the backend, rethrown on the frontend at the next
/// barrier that touches its outputs (or at wait_all).
class BackendError : public Error {
 public:
  explicit BackendError(std::shared_ptr<const OpProvenance> p);
  const OpProvenance& provenance() const { return *prov_; }

 private:
  std::shared_ptr<const OpProvenance> prov_;
};

/// "file:line (function)", or "unknown call site" for a default-constructed
/// location.
std::string format_call_site(const Loc& loc);

}  // namespace tide
