// What a random program's trace must show: every op starts after the end
// of every op it depends on (RAW, WAR, WAW), whichever streams and
// devices they ran on. Shared by the host and the GPU trace tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <tide/core/engine.h>

namespace tide::test {

class TraceOrder {
 public:
  explicit TraceOrder(int storages) : last_write_(static_cast<std::size_t>(storages), -1),
                                      readers_(static_cast<std::size_t>(storages)) {}

  /// The op pushed as `me` reads storage `r` (-1: none) and writes `w`.
  void add(std::uint64_t me, int r, int w) {
    auto& d = deps_[me];
    const auto rs = static_cast<std::size_t>(r), ws = static_cast<std::size_t>(w);
    if (r >= 0 && last_write_[rs] >= 0) d.push_back(last_write_[rs]);  // RAW
    if (last_write_[ws] >= 0) d.push_back(last_write_[ws]);            // WAW
    for (std::int64_t rd : readers_[ws]) d.push_back(rd);              // WAR
    if (r >= 0) readers_[rs].push_back(static_cast<std::int64_t>(me));
    last_write_[ws] = static_cast<std::int64_t>(me);
    readers_[ws].clear();
  }

  /// Checks `trace` (every op added, and no other) and returns how many
  /// dependencies it checked. `what` names the program in failures.
  int check(const Engine& e, const std::vector<TraceEvent>& trace, const std::string& what) const {
    std::map<std::uint64_t, TraceEvent> by_push;
    for (const auto& ev : trace) by_push[ev.push_index] = ev;
    EXPECT_EQ(by_push.size(), deps_.size()) << what << ": one event per op";
    int checked = 0;
    for (const auto& [me, must_follow] : deps_) {
      auto it = by_push.find(me);
      if (it == by_push.end()) {
        ADD_FAILURE() << what << ": op #" << me << " has no event";
        continue;
      }
      const TraceEvent& op = it->second;
      EXPECT_GE(op.end_ns, op.start_ns) << what << ": op #" << me;
      for (std::int64_t p : must_follow) {
        const TraceEvent& before = by_push.at(static_cast<std::uint64_t>(p));
        EXPECT_GE(op.start_ns, before.end_ns) << what << ": op #" << me << " on " << e.stream_name(op.stream)
                                              << " started before op #" << p << " on "
                                              << e.stream_name(before.stream) << " ended";
        ++checked;
      }
    }
    return checked;
  }

 private:
  std::vector<std::int64_t> last_write_;                // per storage, the last writer's push index
  std::vector<std::vector<std::int64_t>> readers_;      // per storage, its readers since
  std::map<std::uint64_t, std::vector<std::int64_t>> deps_;  // push index -> what it must follow
};

}  // namespace tide::test
