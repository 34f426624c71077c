// The ranks of one communicator over MPI, and how its host collectives run
// and are timed on the comm thread (cpu:0's comm stream, the only thread of
// the rank that calls MPI). Internal to comm/.
#pragma once

#include <mpi.h>

#include <chrono>
#include <exception>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../health/desync.h"
#include "../health/failure.h"
#include "../health/liveness.h"
#include "watchdog.h"

namespace tide::detail {

class MpiGroup {
 public:
  /// `health`: the communicator's failure state (a failed or timed-out MPI
  /// call breaks it); `split`: a group made by split, not a world.
  MpiGroup(FailureState& health, double timeout_s, bool split)
      : health_(health), timeout_s_(timeout_s), split_(split) {}
  ~MpiGroup();
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;

  // Who the members are: set up before the comm thread can see the group.
  bool active = false;  // over MPI; false for a local world of one rank
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  int world_rank = 0;
  /// Member i's world rank, and an id every member agrees on (0: a world),
  /// for the roll call of a long wait (liveness.h).
  std::vector<int> world_ranks;
  std::uint64_t ident = 0;
  /// Called every 16th poll of a wait: the desync checks progress there, so
  /// a collective that hangs because ranks diverged is named by a check.
  std::function<void()> on_poll;
  /// Whether a desync check is still to be judged (SyncChecker::busy_any):
  /// a wait that heard a peer's failure polls on for up to kToldGrace_s
  /// while one is, so that a desync behind that failure is named.
  std::function<bool()> checks_busy;
  /// (The checks' own waits give them the same: SyncChecker::fail_if_told.)
  static constexpr double kToldGrace_s = 1.0;

  /// More than one rank over MPI: collectives talk to peers.
  bool spans_ranks() const { return active && size > 1; }
  double timeout_s() const { return timeout_s_; }
  /// "2 ranks" for a world, "group of 2 ranks" for a split.
  std::string peers() const;
  /// The comm thread enters collective `what` (for roll calls and the
  /// SIGTERM report).
  void enter(const CollectiveId& what) const {
    if (active) liveness_enter(ident, what, size, split_);
  }

  /// Runs one collective on the comm thread. Small ones use MPI's
  /// non-blocking form, polled against the deadline. Large ones first check
  /// that every rank has arrived at the same collective (arrive) and then
  /// call MPI's blocking form: Open MPI's non-blocking collectives reach
  /// well under half the bandwidth of its tuned blocking ones. The blocking
  /// call cannot be polled, so the process's watchdog holds its deadline
  /// (watchdog.h): a peer that freezes or loses its link mid-transfer ends
  /// the job at TIDE_COMM_TIMEOUT after the collective began, as a timeout
  /// of a small one does.
  template <typename StartNonBlocking, typename Blocking>
  void collective(const CollectiveId& what, std::size_t bytes, StartNonBlocking start, Blocking blocking) {
    if (bytes < kBlockingFromBytes) {
      MPI_Request req;
      if (int rc = start(&req); rc != MPI_SUCCESS) mpi_failed(rc, "the non-blocking MPI call", what);
      wait(req, what);
      liveness_leave();
      return;
    }
    const auto began = std::chrono::steady_clock::now();
    arrive(what);
    int rc = MPI_SUCCESS;
    {
      const double arrived_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      BlockingDeadline deadline(world_rank, deadline_after(began),
                                [this, what, bytes, arrived_s] { return overdue(what, bytes, arrived_s); });
      rc = blocking();
    }
    if (rc != MPI_SUCCESS) {
      held_ = nullptr;
      mpi_failed(rc, "the blocking MPI call", what);
    }
    liveness_leave();
    rethrow_held();
  }
  static constexpr std::size_t kBlockingFromBytes = 64 << 10;

  /// Polls `req` until done or the deadline; meanwhile runs on_poll (so a
  /// collective that hangs because ranks diverged is named by the check,
  /// not by the timeout). Once the wait is past its first spin it answers
  /// other ranks' roll calls; every kLookEvery_s it looks at the members'
  /// processes on this host (one that is gone fails the wait at once,
  /// naming it), and past kRollCallAfter_s it holds its own roll call (again
  /// every kRollCallAfter_s), so that a timeout names the members that did
  /// not arrive, and a collective skipped on some ranks and waited in on
  /// others is named at once (RollCall::skip_found). Comm thread.
  void wait(MPI_Request& req, const CollectiveId& what) { wait(&req, 1, what); }
  /// The same for `n` requests, done when all are (their statuses into
  /// `statuses` when given).
  void wait(MPI_Request* reqs, int n, const CollectiveId& what, MPI_Status* statuses = MPI_STATUSES_IGNORE);
  static constexpr double kLookEvery_s = 0.25;
  static constexpr double kRollCallAfter_s = 1.0;

  /// A polled, timed rendezvous of every rank that also compares what each
  /// is about to run (an all-gather of sequence number and signature): a
  /// mismatch fails here, on every rank, before any blocking MPI call. Up to
  /// kPointToPointArrival ranks it is made of point-to-point messages (a
  /// few microseconds less than MPI's non-blocking all-gather, which is most
  /// of what a large collective costs beyond MPI's own call); above, the
  /// all-gather (its messages grow as log p, not p).
  ///
  /// A failure that the desync check finds while this rank waits here (a
  /// divergence at a later collective, say) is held, not thrown: this
  /// rank's arrival message is out, so peers may already be inside the
  /// blocking call, which would wait for this rank until the deadline. The
  /// wait goes on for at most kHeldGrace_s; if every rank arrives at the
  /// same collective, the caller runs it and then calls rethrow_held().
  void arrive(const CollectiveId& what) { (void)exchange(what, nullptr, 0, true); }

  /// One round of point-to-point messages among at most
  /// kPointToPointArrival ranks: each rank sends every other a header (the
  /// sequence number and signature of `what`) followed by `bytes` of
  /// `payload`, and receives theirs, polled like any wait. Headers that
  /// differ fail it on every rank, naming the desync (or, when some rank is
  /// at a later sequence number, the collective it skipped). A rank in
  /// another kind of wait (a small broadcast, MPI's path for a larger
  /// collective) sends no header here: the desync check and the roll calls
  /// name that, as they do for MPI's non-blocking collectives. Returns where each
  /// rank's payload is (rank r's at [r], this rank's a copy of `payload`),
  /// valid until the next exchange. `hold`: failures the desync checks find
  /// meanwhile are held (arrive); otherwise they are thrown at once.
  ///
  /// For an all-reduce or all-gather of at most kExchangeBytes in all
  /// (exchanges()), this one round is the whole collective: each rank then
  /// combines the payloads in rank order, so every rank computes the same
  /// result. MPI's recursive doubling takes log2(p) rounds and, in its
  /// non-blocking form, schedule bookkeeping that costs twice the blocking
  /// call at these sizes; the header makes the desync check part of it.
  const unsigned char* const* exchange(const CollectiveId& what, const void* payload, std::size_t bytes, bool hold);
  /// A collective that is one exchange (exchanges()): its payloads, and the
  /// rank has left it.
  const unsigned char* const* exchange_collective(const CollectiveId& what, const void* payload, std::size_t bytes) {
    const unsigned char* const* parts = exchange(what, payload, bytes, false);
    liveness_leave();
    return parts;
  }
  /// Whether a collective receiving `bytes_per_rank` from each peer runs as
  /// one exchange.
  bool exchanges(std::size_t bytes_per_rank) const {
    return spans_ranks() && size <= kPointToPointArrival &&
           bytes_per_rank * static_cast<std::size_t>(size - 1) <= kExchangeBytes;
  }
  /// The most payload one rank receives in one exchange, from all peers.
  /// Each message stays within Open MPI's shared-memory eager size (4 KiB),
  /// so a send completes without waiting for its receiver.
  static constexpr std::size_t kExchangeBytes = 2048;
  static constexpr std::size_t kHeaderBytes = 32;
  /// Throws the failure arrive() held, if any (after the blocking call).
  void rethrow_held() {
    if (!held_) return;
    std::exception_ptr e = held_;
    held_ = nullptr;
    std::rethrow_exception(e);
  }
  static constexpr double kHeldGrace_s = 1.0;
  static constexpr int kPointToPointArrival = 8;
  static constexpr int kArrivalTag = 77;

  /// An MPI call of `what` returned `rc`: breaks the communicator.
  [[noreturn]] void mpi_failed(int rc, const char* expr, const CollectiveId& what);
  /// `began` plus the timeout (clamped, so that any TIDE_COMM_TIMEOUT fits).
  std::chrono::steady_clock::time_point deadline_after(std::chrono::steady_clock::time_point began) const;

 private:
  /// Fail a wait: members `gone` have vanished, or the deadline passed.
  [[noreturn]] void vanished(const CollectiveId& what, const std::vector<int>& gone, double waited_s);
  [[noreturn]] void timed_out(const CollectiveId& what, RollCall& roll);
  /// Set while arrive() waits: on_poll's failures are held (see arrive).
  bool hold_poll_failures_ = false;
  /// Reused by every exchange; left to MPI (leaked) when one fails, since
  /// its requests stay pending and a late peer would still write into it.
  struct Exchange;
  Exchange* exchange_ = nullptr;
  std::exception_ptr held_;
  /// The watchdog's message for a blocking collective of `bytes` that every
  /// rank arrived at after `arrived_s` and that is past its deadline. Called
  /// on the watchdog thread: reads only what is fixed at creation, no MPI.
  std::string overdue(const CollectiveId& what, std::size_t bytes, double arrived_s) const;
  /// "rank 1 of the group of 2 ranks (world rank 3)": where a wait failed.
  std::string where() const;

  FailureState& health_;
  double timeout_s_;
  bool split_;
};

}  // namespace tide::detail
