// The backend contract: an op as ops/ and comm/ hand it to the engine
// (Engine::push, in <tide/core/engine.h>): its kernel, its read set and its
// write set, and what the kernel sees when a stream's worker runs it.
// Programs that only call ops never need it.
#pragma once

#include <array>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <vector>
#include <tide/core/loc.h>

#include <tide/core/device.h>
#include <tide/core/small_function.h>
#include <tide/core/storage.h>

namespace tide {

/// What a kernel sees when it runs on the backend.
struct OpContext {
  Device device;
  StreamKind stream = StreamKind::compute;
  void* native_stream = nullptr;  // cudaStream_t on CUDA devices, null on CPU
  Storage* const* reads = nullptr;
  Storage* const* writes = nullptr;
  int nreads = 0;
  int nwrites = 0;
  /// Set only for an op with OpDesc::notify_skip that is being skipped (an
  /// input failed, it was cancelled, or its stream could not order it): the
  /// kernel is called with no storages, to react (a collective breaks its
  /// communicator so peers are not left pairing with the wrong one); what
  /// it throws is ignored, and its outputs are poisoned as for any skip.
  bool skipped = false;
  /// Set by the engine while a GPU op is timed for the timeline: see launched().
  void (*on_launched)(void*) = nullptr;
  void* launched_arg = nullptr;

  /// For a GPU kernel that waits on the host after enqueuing its work (a
  /// collective polling its completion): call it right after the enqueue,
  /// so that a traced op's span on the device ends with that work, not
  /// when the host's wait returned. Does nothing otherwise.
  void launched() const {
    if (on_launched) on_launched(launched_arg);
  }

  template <typename T>
  const T* in(int i) const { return static_cast<const T*>(reads[i]->data()); }
  template <typename T>
  T* out(int i) const { return static_cast<T*>(writes[i]->data()); }
};

using KernelFn = SmallFunction<void(const OpContext&)>;

/// The storages an op reads or writes: up to kInline held in the list
/// itself (every op of the ops library but the multi-tensor optimizer
/// steps), up to kCapacity in all.
class StorageList {
 public:
  static constexpr int kInline = 4;
  static constexpr int kCapacity = 64;
  StorageList() = default;
  /// The storages listed, in order: {a.storage(), b.storage()}. Each is
  /// copied once into its slot (an initializer_list would copy each into a
  /// temporary first, and every copy of a shared_ptr is an atomic update on
  /// the push path).
  template <typename... S>
    requires(sizeof...(S) > 0 && (std::is_convertible_v<const S&, const std::shared_ptr<Storage>&> && ...))
  StorageList(const S&... s) {
    static_assert(sizeof...(S) <= kInline, "a list made at once holds at most StorageList::kInline storages; "
                                           "add() takes more");
    (put(s), ...);
  }
  /// Throws UsageError past kCapacity.
  void add(std::shared_ptr<Storage> s);
  int size() const { return n_; }
  Storage* operator[](int i) const { return shared(i).get(); }
  const std::shared_ptr<Storage>& shared(int i) const {
    return i < kInline ? items_[static_cast<std::size_t>(i)] : (*more_)[static_cast<std::size_t>(i - kInline)];
  }
  /// Empties the list.
  void clear();

 private:
  void put(const std::shared_ptr<Storage>& s) { items_[static_cast<std::size_t>(n_++)] = s; }
  std::array<std::shared_ptr<Storage>, kInline> items_{};
  int n_ = 0;
  // The storages past kInline, on the heap; null for all but a few ops, so
  // the list is one pointer larger than the inline slots alone.
  std::unique_ptr<std::vector<std::shared_ptr<Storage>>> more_;
};

/// One op as the frontend hands it to the engine.
struct OpDesc {
  const char* name = "op";
  Device device;
  /// Which of the device's streams; unset means the frontend's current kind
  /// (see StreamScope), which defaults to compute.
  int stream = -1;
  KernelFn fn;
  StorageList reads;
  StorageList writes;
  /// The frontend call that pushed it, named in its errors; set it from a
  /// Loc parameter of the caller (unset reads "unknown
  /// call site").
  Loc loc{};
  /// Call fn (with OpContext::skipped) when the op is skipped.
  bool notify_skip = false;
  /// The op's work is one pass over the bytes it reads and writes
  /// (elementwise ops, reductions, copies, fills), not compute of a higher
  /// order (a matrix product) nor a wait (a collective). On a CPU device the
  /// async engine may then run a small one at once on the frontend thread,
  /// where handing it to the worker would cost more than the op
  /// (SyncPolicy::inline_op_bytes). Its kernel must not block on anything
  /// the frontend does later; like any kernel, it may not use the engine.
  bool memory_bound = false;
  /// On a GPU, the kernel only enqueues device work (launches, asynchronous
  /// copies, device-side waits) and never blocks on another thread or
  /// process. A GPU stream may then run it while the ops launched before it
  /// still wait for their completion event (events follow runs of ops);
  /// before an op without this flag (a collective, a host-side wait) the
  /// stream records their event first, so that whoever waits for them is
  /// never held up by it. The ops library sets it on every op it pushes.
  bool launch_only = false;
  /// The kernel writes only some of the elements of its write set (a
  /// scatter along a strided map): when it succeeds, a block it writes keeps
  /// the poison an earlier failed write left, since the elements it did not
  /// write are still that write's.
  bool partial_write = false;
};

}  // namespace tide
