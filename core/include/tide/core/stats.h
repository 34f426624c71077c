// Counters the engine keeps: what was pushed, where the frontend waited.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tide {

/// One call site that blocked the frontend (a barrier or implicit blocker).
struct BlockerSite {
  std::string kind;       // "wait_to_read", "wait_all", "item", "to_vector", "print"
  std::string call_site;  // "file:line (function)"
  std::uint64_t count = 0;
  std::int64_t blocked_ns = 0;
};

/// Work one stream's backend worker has done.
struct StreamStat {
  std::string name;  // "cpu:0/compute"
  std::uint64_t ops = 0;
  std::int64_t busy_ns = 0;  // time spent running ops (waits for other streams excluded)
};

struct Stats {
  std::uint64_t ops_pushed = 0;
  std::uint64_t ops_completed = 0;
  std::uint64_t ops_failed = 0;   // threw on the backend
  std::uint64_t ops_skipped = 0;  // not run: an input was poisoned, or cancelled
  std::uint64_t cross_stream_waits = 0;  // event waits the dependency tracker added

  std::uint64_t blockers = 0;     // barrier and implicit-blocker calls
  std::int64_t blocked_ns = 0;
  std::vector<BlockerSite> blocker_sites;

  std::uint64_t stalls = 0;       // sync-policy gate blocks
  std::int64_t stalled_ns = 0;
  std::uint64_t stalls_steps = 0, stalls_ops = 0, stalls_bytes = 0;
  bool stalling = false;          // the frontend is in a stall now (counted above once it ends)

  std::uint64_t queued_ops = 0;   // now
  std::uint64_t queued_bytes = 0;  // now
  std::uint64_t peak_queued_ops = 0;
  std::uint64_t peak_queued_bytes = 0;

  std::int64_t backend_busy_ns = 0;  // summed over streams
  std::vector<StreamStat> streams;   // the streams that ran at least one op

  std::uint64_t steps_begun = 0;
  std::uint64_t peak_inflight_steps = 0;  // steps begun but not complete, with or without a cap

  /// A few lines a person can read.
  std::string str() const;
};

}  // namespace tide
