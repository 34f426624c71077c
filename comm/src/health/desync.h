// What ranks must agree on for each collective, and how a disagreement is
// named. Pure functions and values: no MPI, no engine, so the tests can
// check every message without several ranks.
//
// Each collective has a signature (kind, element count, dtype, reduction,
// root, devices per rank: three words). A communicator chains the
// signatures of the collectives pushed on it into one 64-bit hash; the
// desync check compares (count, hash) across ranks and, when they differ,
// the signatures themselves, to name the first collective where the ranks
// part ways.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <tide/comm/types.h>
#include <tide/core/dtype.h>

#include "../spec/collective_kind.h"

namespace tide::detail {

/// The part of a collective every rank must agree on, as three words.
struct CollectiveSig {
  std::uint64_t w[3] = {0, 0, 0};
  bool operator==(const CollectiveSig&) const = default;
};

/// Names one collective for error messages; formatted only on failure, so a
/// push pays for no string. Small (captured by every collective's kernel).
struct CollectiveId {
  CollectiveKind kind = CollectiveKind::barrier;
  std::optional<ReduceOp> op;  // if the collective reduces
  DType dtype = DType::f32;  // meaningful when count >= 0
  std::int32_t root = -1;    // broadcast root, if any
  std::int32_t devices = 0;  // tensors per rank, for a multi-device all-reduce
  std::uint64_t seq = 0;     // place in its communicator's sequence
  std::int64_t count = -1;   // elements per rank; -1: no data (barrier, split)
  std::uint64_t flight = 0;  // its flight recorder record (0: none); not compared

  CollectiveSig sig() const;
  /// The inverse of sig(), for describing what another rank pushed.
  static CollectiveId from_sig(const CollectiveSig& s, std::uint64_t seq);

  /// "all_reduce (1000 x f32, sum)", "broadcast (8 x i32, root 0)", "barrier".
  std::string describe() const;
  /// "all_reduce #3 (1000 x f32, sum, 2 ranks)"; `peers`: "2 ranks",
  /// "group of 2 ranks".
  std::string str(const std::string& peers) const;
};

static_assert(sizeof(CollectiveId) <= 40, "CollectiveId is captured by every collective's kernel: keep it small");

/// The running hash of a collective sequence: h' = chain_hash(h, sig).
std::uint64_t chain_hash(std::uint64_t h, const CollectiveSig& s);

/// "rank 1", "ranks 0,2", "ranks 0-3,5" (sorted input).
std::string rank_list(const std::vector<int>& ranks);

/// One rank's side of a failed sync check: the collectives it pushed since
/// the last check that every rank passed (`base` is the first one's
/// sequence number, `count` the total pushed so far), the first `window` of
/// them, and why its communicator is broken, if it is.
struct CheckRecord {
  std::uint64_t base = 0;
  std::uint64_t count = 0;
  std::uint64_t hash = 0;
  std::vector<CollectiveSig> window;
  bool broken = false;
  std::string reason;
};

/// Names the first collective where the ranks differ ("desync at collective
/// #12: rank 0 pushed all_reduce (...), rank 1 pushed broadcast (...)"), and
/// any rank whose communicator had already failed. Empty when the records
/// agree and no rank is broken.
std::string diagnose(const std::vector<CheckRecord>& ranks);

/// For a collective about to run: every rank's (sequence number, signature).
/// Empty when they agree, else "desync at collective #N: ...".
std::string diagnose_arrival(const std::vector<std::uint64_t>& seqs, const std::vector<CollectiveSig>& sigs);

}  // namespace tide::detail
