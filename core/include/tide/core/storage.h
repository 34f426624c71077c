// Storage: the bytes behind one or more Tensor handles, plus the engine's
// bookkeeping for them (who wrote last, who read since, poison).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <tide/core/device.h>
#include <tide/core/error.h>

namespace tide {

class Stream;
class Storage;
class Mirror;  // <tide/core/mirror.h>

/// A position on a stream's timeline: done once the stream has completed
/// `seq` ops. A null stream means "nothing to wait for".
struct StreamPoint {
  Stream* stream = nullptr;
  std::uint64_t seq = 0;
};

/// Dependency state of one storage. Owned by the frontend thread: only the
/// engine's push path and barriers touch it, so it needs no lock.
struct VarState {
  static constexpr int kMaxReaders = 8;
  StreamPoint last_write;
  std::array<StreamPoint, kMaxReaders> readers{};  // since last_write, one per stream
  int nreaders = 0;
  bool written = false;  // any op has written this storage yet
  /// Ops pushed so far that write this storage (every engine counts them):
  /// autograd compares it to see whether a tensor saved for a backward was
  /// overwritten since.
  std::uint64_t version = 0;
  /// Set on a mirror's storage: how it follows picked elements of another
  /// block (<tide/core/mirror.h>).
  std::shared_ptr<Mirror> mirror;
  /// The mirrors' storages that follow this block; expired ones are dropped
  /// when found.
  std::vector<std::weak_ptr<Storage>> followers;
  /// Whether an op writing this block makes the engine copy elements to or
  /// from a mirror.
  bool mirrored() const { return mirror || !followers.empty(); }
};

class Storage {
 public:
  /// Allocates `nbytes` (64-byte aligned) on `device` for the engine `engine_id`.
  Storage(std::uint64_t engine_id, Device device, std::size_t nbytes);
  /// A view: `nbytes` bytes of `base`'s memory from byte `offset` (a view of
  /// a view is made on the block's owner). It allocates nothing and keeps
  /// the owner alive; the engine orders it as the owner, since dependency
  /// state, write count and poison are the owner's (see var()).
  /// tide::ShapeError when the range passes the end of `base`.
  Storage(const std::shared_ptr<Storage>& base, std::size_t offset, std::size_t nbytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  std::uint64_t engine_id() const { return engine_id_; }
  Device device() const { return device_; }
  std::size_t nbytes() const { return nbytes_; }
  void* data() { return data_; }
  const void* data() const { return data_; }

  /// The storage that owns the memory: this one, or a view's base.
  Storage* owner() { return owner_; }
  const Storage* owner() const { return owner_; }
  bool is_view() const { return owner_ != this; }
  /// Whether this storage spans its owner's whole block.
  bool covers_owner() const { return !is_view() || (data_ == owner_->data_ && nbytes_ == owner_->nbytes_); }
  /// Where this storage's bytes start in its owner's block.
  std::size_t offset() const { return static_cast<std::size_t>(static_cast<const char*>(data_) -
                                                                static_cast<const char*>(owner_->data_)); }

  /// The storage that owns `s`'s memory, held: `s` itself, or a view's base.
  static std::shared_ptr<Storage> owner_of(const std::shared_ptr<Storage>& s) {
    return s->is_view() ? s->base_ : s;
  }

  /// The owner's state: every view of one block shares it.
  VarState& var() { return owner_->var_; }
  const VarState& var() const { return owner_->var_; }

  /// Set by the op that last wrote this storage when it failed (or was
  /// skipped because an input was poisoned); cleared by a successful write.
  /// Ordered like the data itself: the engine's RAW/WAR/WAW edges protect it.
  /// Kept by the owner, as var() is.
  const std::shared_ptr<const OpProvenance>& poison() const { return owner_->poison_; }
  void set_poison(std::shared_ptr<const OpProvenance> p) { owner_->poison_ = std::move(p); }

 private:
  // Written by the frontend at every push that uses this storage, as are
  // the reference counts that make_shared puts just before it (every op
  // holds its storages): first, and a cache line away from the fields
  // below, which workers read at every op, so that a worker's read does
  // not pull a line the frontend keeps writing. (Padding, not alignas: an
  // over-aligned type would make every make_shared go through the slower
  // aligned allocator.)
  VarState var_;
  char pad_[64] = {};
  // Read by workers.
  std::uint64_t engine_id_;
  Device device_;
  std::size_t nbytes_;
  void* data_ = nullptr;
  Storage* owner_ = this;
  std::shared_ptr<Storage> base_;  // a view's owner, held; null for an owner
  std::shared_ptr<const OpProvenance> poison_;
};

}  // namespace tide
