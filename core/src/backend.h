// The GPU backend seam (internal to core/): everything core needs from a GPU
// device kind, and nothing else.
//
// The CPU device kind is core's own: host memory (storage.cc), host copies
// (copy.cc) and host worker threads (stream.cc). Devices of the GPU kind
// (Device::is_cuda) reach the hardware only through the calls below, which
// exactly one implementation defines per build:
//
//   cuda/     the CUDA runtime (TIDE_HAVE_CUDA: the toolkit was found)
//   no_gpu/   a stub: no devices; every call that needs one throws
//             tide::DeviceError saying the build has no GPU backend
//
// Core never calls the stub in a run without GPU devices: device_count() is
// 0, so no engine has a GPU device, no storage, stream or lane of one is
// made, and the public calls that name one (use_cuda_device, ...) check the
// count first. `native stream` below is the backend's stream handle
// (cudaStream_t), passed to kernels as OpContext::native_stream.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <tide/core/device.h>
#include <tide/core/device_guard.h>

namespace tide::backend {

// --- Devices -------------------------------------------------------------

/// Whether this build has a GPU backend (false for the stub).
bool built();
/// GPUs this process can use; 0 without a driver, a device or a backend,
/// and on any error. Never throws.
int device_count();
/// `device`'s UUID as 32 hex digits (device in [0, device_count())).
std::string device_uuid(int device);
/// Why processes other than the first cannot use `device` (its compute mode
/// is exclusive-process or prohibited), or "" when they can.
std::string device_unshareable(int device);
/// Makes `device` the calling thread's current GPU (throws tide::Error).
void set_device(int device);

// DeviceGuard: <tide/core/device_guard.h> (shared with ops and comm).

/// How a device's event clock follows the host's while tracing (see
/// device_clock.h): anchors made, host readings used and ignored (too
/// wide), and the distance between a reading and where the clock had put
/// its anchor (the last, and the largest).
struct ClockReport {
  std::uint64_t anchors = 0, readings_used = 0, readings_ignored = 0;
  std::uint64_t link_failures = 0;  // renewals dropped for want of their interval (the clock then ages)
  double last_residual_ns = 0, max_residual_ns = 0;
};
/// False when `device` has no clock (nothing on it was traced yet).
bool clock_report(int device, ClockReport& out);

// --- Memory --------------------------------------------------------------

/// A block of `device`'s memory for a storage (a distinct pointer even for
/// 0 bytes); throws tide::OutOfMemoryError when the device has no room.
/// Called from the frontend thread at push time. Freed blocks are cached on
/// the host by size class (block_cache.h) and handed out again without a
/// call to the driver.
void* alloc(int device, std::size_t nbytes);
/// Returns a block alloc(device, nbytes) gave. Called when a storage's last
/// reference drops, which is after the last op using it has completed on
/// the device.
void free(int device, void* p, std::size_t nbytes) noexcept;
/// Waits for all work queued on `device` (cudaDeviceSynchronize), keeping
/// the calling thread's current device; errors are swallowed.
void synchronize_device(int device) noexcept;
/// Bytes of `device`'s memory now handed out to storages, in whole size
/// classes (throws
/// tide::DeviceError for a device this process does not have).
std::uint64_t memory_used(int device);
/// Gives `device`'s cached free blocks back to the driver (device in
/// [0, device_count())); never throws.
void empty_cache(int device) noexcept;

// --- Copies --------------------------------------------------------------

/// Copies `nbytes` between any two devices (one of them a GPU) as part of
/// an op running on `native_stream`, the stream of the GPU involved (throws
/// tide::DeviceError when it is null: the op was not on a GPU's stream).
/// A device-to-host copy returns once the bytes are in host memory.
void copy(void* native_stream, Device dst_dev, void* dst, Device src_dev, const void* src, std::size_t nbytes);
/// Blocker path: device bytes to host memory, synchronously (the producers
/// have completed already).
void read_to_host(int device, void* dst, const void* src, std::size_t nbytes);

// --- Synchronous execution -------------------------------------------------

/// The process's one native stream of `kind` on `device` for engines that
/// run ops synchronously (the naive engine): made at first use, never
/// destroyed.
void* shared_stream(int device, StreamKind kind);
/// Waits for `native_stream` and throws if it or an earlier op failed.
void sync_stream(void* native_stream);
/// Whether every GPU op should wait for its own completion (TIDE_CUDA_SYNC=1
/// on CUDA), so a fault names the op that caused it. False for the stub.
bool sync_mode();

/// An NVTX range named `name` on the calling thread (the worker around each
/// op), so that Nsight Systems shows tide's op names; nothing without CUDA.
/// Without a profiler attached NVTX checks one pointer and returns.
void range_push(const char* name) noexcept;
void range_pop() noexcept;

// --- Lanes -----------------------------------------------------------------

/// A failure a lane call reports: empty `what` is success. `sticky`: the
/// device is unusable from now on (its later ops can only fail).
struct Fault {
  std::string what;
  bool sticky = false;
  explicit operator bool() const { return !what.empty(); }
};

/// The GPU side of one tide stream: a native stream and a ring of events,
/// recorded after runs of the ops the stream's worker launches (an event
/// after op `seq` shows every op up to it done; Stream::cover says when).
///
/// The event recorded after op `seq` lives in slot seq % kRing. Three
/// threads use a lane: its stream's worker records events; the workers of
/// other GPU streams make their native streams wait on them (the host does
/// not block); its stream's completion thread waits for them in order and
/// so learns what the GPU has finished. The caller (Stream) records after
/// op `seq` only once op seq - kRing has completed.
class Lane {
 public:
  /// Ops a stream may have launched and not completed; its worker waits
  /// past that (a bound on queued GPU work of about 1k kernels).
  static constexpr std::uint64_t kRing = 1024;

  virtual ~Lane() = default;

  virtual int device() const = 0;
  /// Makes the lane's device current on the calling thread (its stream's
  /// worker and completion thread, once each as they start); throws
  /// tide::Error when it cannot.
  virtual void bind_thread() const = 0;
  /// The native stream the stream's ops launch on.
  virtual void* native() const = 0;
  /// The frontend, around an op it launches itself (Stream::launch_here):
  /// makes the lane's device current and returns what restore() puts back
  /// (-1: nothing), so that the user's current device is left as it was.
  /// Throws tide::Error when the device cannot be made current. By default
  /// nothing is switched (a simulated device in the tests).
  virtual int enter() const { return -1; }
  virtual void restore(int /*previous*/) const noexcept {}
  /// Worker: after launching op `seq` (and the ops since the last event). A
  /// fault here loses the stream (its completion can no longer be seen).
  virtual Fault record(std::uint64_t seq) = 0;
  /// Another GPU stream's worker: makes `consumer` (a native stream) wait
  /// for op `seq` of this lane, which its worker has launched and covered
  /// with an event, unless `completed` (this lane's stream's completed
  /// count) shows it done. The wait is on the first event recorded at or
  /// after `seq`, which may also cover the rest of its run.
  virtual Fault make_wait(std::uint64_t seq, void* consumer, const std::atomic<std::uint64_t>& completed) = 0;
  /// Completion thread: blocks until op `seq`, after which an event was
  /// recorded, has run on the device. It polls for a few microseconds, and
  /// on while a host thread waits for one of the ops the event covers
  /// (`first` <= `host_wants` <= `seq`), up to a bound, as a CUDA
  /// synchronize spins; then it sleeps.
  virtual Fault wait_done(std::uint64_t seq, const std::atomic<std::uint64_t>& host_wants, std::uint64_t first) = 0;
  /// How long a host thread that waits for this lane's ops to complete
  /// (Stream::wait_until) polls before it sleeps: it is woken by the
  /// completion thread otherwise, a second wake-up after the one wait_done
  /// avoids. 50 us by default.
  virtual std::chrono::microseconds host_poll() const { return std::chrono::microseconds(50); }

  // Tracing: an op's span on the device, not its launch.
  /// Worker: just before launching op `seq`, and just after (before
  /// record(seq)): timing events around its work on the device.
  virtual Fault record_begin(std::uint64_t seq) = 0;
  virtual Fault record_end(std::uint64_t seq) = 0;
  /// Completion thread, after wait_done(seq) succeeded for an op recorded
  /// with both: when it began and ended on the device, on the host's steady
  /// clock (each device's event clock is placed on it once, when its first
  /// op is timed). False when the device cannot say.
  virtual bool span(std::uint64_t seq, std::int64_t& start_ns, std::int64_t& end_ns) = 0;
};

/// A new lane on `device`: the comm stream's native stream gets the
/// highest priority, so a bucket's all-reduce is not starved by queued
/// compute. Throws tide::Error when the device cannot make one.
std::unique_ptr<Lane> make_lane(int device, StreamKind kind);

}  // namespace tide::backend
