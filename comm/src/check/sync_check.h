// The desync check of one communicator: the hash and window of the
// collectives pushed (frontend), which collectives the comm thread ran or
// skipped, and the exchanges that compare all of it across ranks (comm
// thread). How it works: sync_check.cc. Internal to comm/.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <tide/comm/types.h>

#include "../health/desync.h"
#include "../health/failure.h"
#include "sig_history.h"

namespace tide::detail {

class MpiGroup;

/// One desync check as the frontend posts it: where the sequence stands.
struct SyncCheck {
  std::uint64_t index = 0;  // this communicator's n-th check
  std::uint64_t base = 0;   // first collective since the previous check
  std::uint64_t count = 0;  // collectives pushed before this check
  std::uint64_t hash = 0;   // chained over all of them
  std::vector<CollectiveSig> window;  // the first kWindow since base
  // The same for the collectives on GPUs (NCCL), numbered apart.
  std::uint64_t device_base = 0, device_count = 0, device_hash = 0;
  std::vector<CollectiveSig> device_window;
};

class SyncChecker {
 public:
  static constexpr std::size_t kWindow = 256;
  /// `parent`: the checker of the communicator this one was split from
  /// (null for a world); it outlives this one.
  SyncChecker(MpiGroup& mpi, FailureState& health, const CommOptions& options, SyncChecker* parent)
      : mpi_(mpi), health_(health), options_(options), parent_(parent) {}
  SyncChecker(const SyncChecker&) = delete;
  SyncChecker& operator=(const SyncChecker&) = delete;

  /// TIDE_DESYNC_CHECK and more than one rank over MPI; set at creation.
  bool enabled() const { return enabled_; }
  /// Turns checking on if the options and the size allow it (at creation,
  /// once the group's ranks are known): duplicates its communicator twice.
  void enable();

  // ---- Frontend ------------------------------------------------------------
  /// At every host collective's push: its signature is chained into the
  /// hash, kept in the window and in the history.
  void note_host(const CollectiveId& id);
  /// At every GPU collective's push: chained into the GPU collectives' own
  /// hash.
  void note_device(const CollectiveId& id);
  /// Where a posted check stands: its index, and how many host collectives
  /// it covers.
  struct Posted {
    std::uint64_t index = 0, count = 0;
  };
  /// Posts a check of the sequence so far (`next_seq` host collectives,
  /// `next_device_seq` GPU ones pushed); the caller pushes an op that runs
  /// it. Nothing (and no check) when nothing was pushed since the last one.
  std::optional<Posted> post(std::uint64_t next_seq, std::uint64_t next_device_seq);
  /// Whether a check was ever posted.
  bool posted_any() const { return checks_posted > 0; }

  // ---- Comm thread ---------------------------------------------------------
  /// At the start of every collective's kernel: the ones between the last
  /// that ran and `seq` were skipped. Kept with the check off too: the roll
  /// calls of a long wait name such a skip (liveness_skipped).
  void note_running(std::uint64_t seq) {
    note_skipped_before(seq);
    decided = seq + 1;
  }
  /// Starts the next posted check, tests the one in flight and judges it
  /// when done (a desync fails here). Never blocks on peers except to name
  /// a desync already found.
  void poll();
  /// poll on this communicator and those it was split from.
  void poll_all();
  /// A check of this communicator or one it was split from is posted and
  /// not yet judged (or a recheck is owed): a failure a peer told of may
  /// yet be named better by it (a desync behind an MPI error).
  bool busy_any() const;
  /// The check op: waits (timed) for the checks before `index` and starts
  /// check `index` (of the first `count` collectives), which completes in
  /// later polls.
  void run(std::uint64_t index, std::uint64_t count);
  /// Waits (timed) until every posted check has finished.
  void finish();
  /// Frees the duplicates (the group is being freed; checks are finished).
  void free_comms();
  /// At destruction: frees the duplicates that no exchange is pending on.
  void free_comms_at_exit();

 private:
  void note_skipped_before(std::uint64_t seq) {
    if (decided < seq) note_skips(seq);
  }
  /// Records the skips of collectives decided..seq-1, here and for the roll
  /// calls (liveness_skipped).
  void note_skips(std::uint64_t seq);
  void start_check();
  void judge_check();
  /// Second exchange of a check whose ranks disagree; its end names the
  /// difference (and fails).
  void start_difference();
  void name_difference();
  void poll_recheck();
  /// A collective skipped on some ranks and run on others: the message, or
  /// "" (and, once every rank skipped it, it is forgotten). `all`: the
  /// gathered words; `undecided` is set when a rank skipped a collective
  /// that another has not decided yet (a recheck is owed).
  std::string judge_skips(const std::vector<std::uint64_t>& all, bool& undecided);
  [[noreturn]] void fail_skips(const std::string& skips, const char* by);
  [[noreturn]] void check_timed_out(const char* during, double waited_s);
  /// How long the check ops wait for their peers: the timeout, or at most
  /// kBrokenCheckWait_s once the communicator is broken.
  double check_wait_s() const;
  static constexpr double kBrokenCheckWait_s = 1.0;
  /// A peer told of a failure (told_failure) while this waits for checks:
  /// fails with it once the checks have had MpiGroup::kToldGrace_s to name a
  /// desync. `told_at_s`: when it was first seen (-1: not yet), kept by the
  /// caller.
  void fail_if_told(double& told_at_s, double waited_s);
  [[noreturn]] void check_mpi_failed(int rc, const char* expr);

  MpiGroup& mpi_;
  FailureState& health_;
  const CommOptions& options_;
  SyncChecker* parent_;
  bool enabled_ = false;
  SigHistory history_;

  /// A sequence of collectives as the frontend pushed them: the hash of
  /// all, and the first kWindow signatures since the last check.
  struct Sequence {
    std::uint64_t hash = 0;
    std::uint64_t base = 0;  // the first collective since the last check
    std::vector<CollectiveSig> window;  // reserved to kWindow
    void note(const CollectiveSig& s) {
      hash = chain_hash(hash, s);
      if (window.size() < kWindow) window.push_back(s);
    }
    /// Hands the window to a check (base, count = `next`, hash, window) and
    /// starts the next one at `next`.
    void hand_over(std::uint64_t next, std::uint64_t& base_out, std::uint64_t& count_out, std::uint64_t& hash_out,
                   std::vector<CollectiveSig>& window_out) {
      base_out = base;
      count_out = next;
      hash_out = hash;
      window_out.assign(window.begin(), window.end());
      window.clear();
      base = next;
    }
  };
  // Frontend only.
  Sequence host_seq;
  Sequence device_seq;  // the GPU collectives, numbered apart
  std::uint64_t checks_posted = 0;
  // Frontend to comm thread.
  std::mutex check_mutex;
  std::deque<SyncCheck> check_queue;           // guarded by check_mutex
  std::atomic<std::uint64_t> checks_ready{0};  // pushed on check_queue so far
  std::atomic<bool> check_failed{false};       // no more checks: one failed
  /// The first exchange, per rank: count, hash, broken, decided, first skip,
  /// GPU collectives' count and hash, skips agreed (every skip below it was
  /// found skipped on every rank and forgotten).
  static constexpr int kWords = 8;
  std::array<std::uint64_t, kWords> check_mine{};
  std::vector<std::uint64_t> check_all;
  // Comm thread only (set up before the comm thread can see the checker).
  MPI_Comm check_comm = MPI_COMM_NULL;  // a duplicate: checks never match data collectives
  std::uint64_t checks_started = 0;
  std::uint64_t checks_finished = 0;
  bool check_in_flight = false;
  /// The check in flight has agreed on nothing: its second exchange (the
  /// windows, to name the difference) is the one in flight now.
  bool naming_difference = false;
  std::chrono::steady_clock::time_point naming_since{};
  std::vector<std::uint64_t> difference_mine, difference_all;
  SyncCheck current;
  MPI_Request check_req = MPI_REQUEST_NULL;
  /// Re-exchanges of the skip words, on a communicator of their own
  /// (recheck_comm) so that they never pair with a posted check: a check
  /// that finds a skip not yet decided by every rank owes one, on every rank
  /// alike (each saw the same words), and so does a recheck that finds the
  /// same. They run from the same polls as the checks, whatever else is
  /// posted, so a skip found after the last posted check is still judged.
  MPI_Comm recheck_comm = MPI_COMM_NULL;
  std::uint64_t rechecks_owed = 0;
  bool recheck_in_flight = false;
  MPI_Request recheck_req = MPI_REQUEST_NULL;
  std::array<std::uint64_t, kWords> recheck_mine{};
  std::vector<std::uint64_t> recheck_all;
  std::chrono::steady_clock::time_point recheck_at{};
  std::chrono::microseconds recheck_pause{0};

  std::string check_failure;
  // Which collectives ran. A collective whose input comes from a failed op
  // is skipped by the engine (its kernel never runs): fine when every rank
  // skips it, a desync when only some do (the others wait in it).
  std::uint64_t decided = 0;          // collectives before this one ran or were skipped
  std::deque<std::uint64_t> skipped;  // skipped here, not yet seen skipped on every rank
  /// One past the last skip found skipped on every rank (and popped from
  /// `skipped`). Checks and rechecks interleave differently on each rank, so
  /// a rank may have forgotten a skip that another still reports: this word
  /// tells the judge that it skipped it too.
  std::uint64_t agreed_skips = 0;
  static constexpr std::size_t kMaxSkipped = 1024;
};

}  // namespace tide::detail
