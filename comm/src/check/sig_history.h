// The signatures of the last kHistory collectives pushed on a communicator,
// by sequence number: written by the frontend at push, read by the comm
// thread to name a collective that one rank skipped (found a few checks
// late, perhaps). Internal to comm/.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "../health/desync.h"

namespace tide::detail {

class SigHistory {
 public:
  static constexpr std::size_t kHistory = 4096;
  /// Allocates the slots (at creation, when checks are on).
  void enable() { slots_ = std::make_unique<Slot[]>(kHistory); }
  /// Frontend: collective `seq` has signature `s`.
  void record(std::uint64_t seq, const CollectiveSig& s) {
    Slot& slot = slots_[seq % kHistory];
    slot.seq.store(~std::uint64_t{0}, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (int i = 0; i < 3; ++i) slot.w[i].store(s.w[i], std::memory_order_relaxed);
    slot.seq.store(seq, std::memory_order_release);
  }
  /// Comm thread: collective `seq` described ("all_reduce (1000 x f32,
  /// sum)"), or "" when the history no longer holds it.
  std::string describe(std::uint64_t seq) const {
    if (!slots_) return "";
    const Slot& slot = slots_[seq % kHistory];
    if (slot.seq.load(std::memory_order_acquire) != seq) return "";
    CollectiveSig s;
    for (int i = 0; i < 3; ++i) s.w[i] = slot.w[i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.seq.load(std::memory_order_relaxed) != seq) return "";  // rewritten meanwhile
    return CollectiveId::from_sig(s, seq).describe();
  }

 private:
  /// A slot's tag is its sequence number, cleared while it is rewritten, so
  /// a slot reused since reads as unknown.
  struct Slot {
    std::atomic<std::uint64_t> seq{~std::uint64_t{0}};
    std::atomic<std::uint64_t> w[3] = {0, 0, 0};
  };
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace tide::detail
