// Who is where, when a collective waits too long. Internal to comm/.
//
// Three parts, all cheap until a wait gets long:
// - where this rank is: the collective its comm thread last entered, kept
//   in a few atomics (a handful of stores per collective), for the answers
//   below and for the SIGTERM report;
// - a roll call: a rank whose collective has waited a while asks every
//   member where it is, over a duplicate of the world kept for this; every
//   comm thread that polls a collective or a desync check answers such
//   questions. Members on this host are also looked at directly: a process
//   that is gone has vanished, and the wait fails at once naming it;
// - the SIGTERM report: when one rank dies, mpirun ends the others with
//   SIGTERM; each then prints the collective it was in and the ranks on its
//   host whose processes are gone.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "desync.h"

namespace tide::detail {

/// Collective over `world` (frontend, before the comm thread makes MPI
/// calls): duplicates it for questions and answers and gathers every rank's
/// host and process id. Later calls do nothing.
void liveness_init(MPI_Comm world);

/// The comm thread enters collective `id` of the communicator `ident`
/// (0: the world) with `size` members (`group`: a split one).
void liveness_enter(std::uint64_t ident, const CollectiveId& id, int size, bool group);
/// ... and has finished it.
void liveness_leave();
/// cuda:`device`'s comm stream waits in GPU collective `id` (NCCL), and is
/// done with it: only the SIGTERM report names it (when the host comm
/// thread is in no collective). Each GPU of a rank has a record of its own.
void liveness_enter_gpu(int device, const CollectiveId& id, int size, bool group);
void liveness_leave_gpu(int device);
/// The comm thread skipped collective `seq` of communicator `ident` (its
/// input came from a failed op): roll calls carry the latest run of such
/// consecutive skips, so
/// that a rank waiting in a collective a peer skipped, or one whose peer
/// waits in a collective it skipped, names the skip (RollCall::skip_found)
/// when no desync check is left to compare the ranks.
void liveness_skipped(std::uint64_t ident, std::uint64_t seq);

/// Comm thread, in poll loops once they have waited past their first spin:
/// answers the questions other ranks sent, takes in the failures peers
/// told of (told_failure), and sends this rank's own if another thread
/// left it to send (liveness_tell_peers). `in_check`: the loop waits for a
/// desync check, not a collective.
void serve_queries(bool in_check = false);

/// This rank's world broke, for `reason` (said where it was found): every
/// other rank is told at once, over the roll calls' duplicate of the world,
/// so that a peer waiting for this rank fails within milliseconds naming
/// the same cause, instead of waiting out its timeout for a rank that no
/// longer answers roll calls. Once per process; nothing when a peer told
/// this rank first (the peers heard it from there). Any thread: on one
/// that makes no MPI calls (a GPU's comm stream worker) it is left for the
/// comm thread's next wait past its first spin, and goes untold if the comm
/// thread waits nowhere before the job ends.
void liveness_tell_peers(const std::string& reason);
/// The first failure a peer told this rank of, as "<its reason> (reported
/// by rank R, where it was found)", or "". Comm thread: waits fail with it.
std::string told_failure();

/// True when world rank `r` runs on this host and its process is gone.
bool process_gone(int world_rank);
/// The members (`world_ranks[i]` is member i's world rank) but `me` whose
/// processes are gone from this host.
std::vector<int> gone_members(const std::vector<int>& world_ranks, int me);

/// What this host's /proc says of world rank `r`'s process ("its process is
/// stopped (SIGSTOP, Ctrl-Z)", "on another host"), or "" for this rank or
/// when unknown. Any thread; no MPI.
std::string process_note(int world_rank);

/// One collective's roll call (comm thread). Empty, and free, until asked.
class RollCall {
 public:
  /// Asks every member (`world_ranks[i]` is member i's world rank) but `me`.
  void ask(const std::vector<int>& world_ranks, int me);
  bool asked() const { return asked_; }
  /// Takes the answers that have come in.
  void collect();
  /// For a timeout of collective `id` on communicator `ident` (of `peers`,
  /// "3 ranks"): "ranks that did not arrive: 1, 2 (rank 1 did not answer
  /// ...; rank 2 is waiting in ...)", or "" when every member answered from
  /// this very collective.
  std::string absent(std::uint64_t ident, const CollectiveId& id, const std::string& peers) const;
  /// While waiting in collective `id` of communicator `ident`: when a
  /// member that answered skipped `id`, or waits in a collective of `ident`
  /// that this rank skipped, the message naming that skip (as the desync
  /// check words it); else "".
  std::string skip_found(std::uint64_t ident, const CollectiveId& id) const;

 private:
  struct Answer {
    bool got = false;
    std::uint64_t state = 0, ident = 0, seq = 0, size = 0;
    CollectiveSig sig;
    std::uint64_t skip_ident = 0, skip_first = 0, skip_last1 = 0;  // its latest run of skips (last1 0: none)
  };
  bool asked_ = false;
  std::uint64_t query_ = 0;
  int me_ = 0;
  std::vector<int> world_ranks_;
  std::vector<Answer> answers_;
  /// "rank 2" or, in a group, "rank 1 (world rank 2)".
  std::string name(int member) const;
};

}  // namespace tide::detail
