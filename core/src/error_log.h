// The backend errors an engine has not yet reported at a barrier. Internal
// to core/: the engine keeps one, guarded by its counters' mutex (the
// callers hold it; the log takes no lock of its own, so a device's failure
// slot and its error change together).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <tide/core/error.h>

namespace tide {

class ErrorLog {
 public:
  /// Errors past this many are dropped (counted in Stats::failed all the
  /// same): the first ones say what went wrong.
  static constexpr std::size_t kCap = 1024;

  /// A failure of the op pushed `push_index`-th.
  void record(std::shared_ptr<const OpProvenance> prov, std::uint64_t push_index) {
    if (entries_.size() < kCap) entries_.push_back({std::move(prov), push_index});
  }
  /// `prov` is being reported another way (a blocker on its output, the
  /// device's failure): not again by take_first.
  void forget(const std::shared_ptr<const OpProvenance>& prov) {
    std::erase_if(entries_, [&](const Entry& e) { return e.prov == prov; });
  }
  /// The error of the earliest pushed op (null if none); the log is then
  /// empty, as a barrier reports one error for all.
  std::shared_ptr<const OpProvenance> take_first() {
    if (entries_.empty()) return nullptr;
    auto first = std::min_element(entries_.begin(), entries_.end(),
                                  [](const Entry& a, const Entry& b) { return a.push_index < b.push_index; })->prov;
    entries_.clear();
    return first;
  }
  /// Forgets everything (cancelled work: its errors are not the user's).
  void drop() { entries_.clear(); }
  std::size_t size() const { return entries_.size(); }
  /// The first recorded (for the report of an engine destroyed with errors).
  std::shared_ptr<const OpProvenance> first_recorded() const {
    return entries_.empty() ? nullptr : entries_.front().prov;
  }

 private:
  struct Entry {
    std::shared_ptr<const OpProvenance> prov;
    std::uint64_t push_index = 0;
  };
  std::vector<Entry> entries_;
};

}  // namespace tide
