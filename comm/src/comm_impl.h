// The state behind a Communicator handle, shared by the frontend (which
// pushes collectives) and the kernels of those collectives (which run on
// cpu:0's comm thread and make every MPI call of the rank). Internal to comm/.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <tide/comm/communicator.h>
#include <tide/core/engine.h>

#include "desync.h"
#include "liveness.h"
#include "watchdog.h"

namespace tide {

namespace detail {
struct NcclComm;  // nccl_collectives.cc: one NCCL communicator, for one GPU
}

/// The wait schedule of a comm-thread poll loop. MPI progresses a
/// non-blocking collective only inside MPI calls, so the first ~100 polls do
/// not sleep (past that they yield, so that compute threads sharing the
/// core still run). Past 100 us the loop is waiting for a peer that is still
/// computing, and a spinning poller would take the CPU that peer (or this
/// rank's own compute stream) needs: it polls every 50 us, and past a second
/// every millisecond.
class Poller {
 public:
  explicit Poller(double timeout_s);
  /// Call after each poll that found the work not done: pauses per the
  /// schedule; false once past the deadline (looked at every 16 polls).
  bool next();
  /// True on every 16th poll: the time for occasional side work.
  bool periodic() const { return (polls_ & 15) == 0 && polls_ > 0; }
  /// Past the first spin: the wait is no longer a prompt one.
  bool slow() const { return pause_.count() > 0; }
  double waited_s() const { return std::chrono::duration<double>(clock::now() - start_).count(); }

 private:
  using clock = std::chrono::steady_clock;
  clock::time_point start_, deadline_;
  std::chrono::microseconds pause_{0};
  int polls_ = 0;
};

/// One desync check as the frontend posts it: where the sequence stands.
struct SyncCheck {
  std::uint64_t index = 0;  // this communicator's n-th check
  std::uint64_t base = 0;   // first collective since the previous check
  std::uint64_t count = 0;  // collectives pushed before this check
  std::uint64_t hash = 0;   // chained over all of them
  std::vector<detail::CollectiveSig> window;  // the first kWindow since base
  // The same for the collectives on GPUs (NCCL), numbered apart.
  std::uint64_t device_base = 0, device_count = 0, device_hash = 0;
  std::vector<detail::CollectiveSig> device_window;
};

struct Communicator::Impl {
  bool mpi = false;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  int world_rank = 0;
  /// Member i's world rank, and an id every member agrees on (0: a world),
  /// for the roll call of a long wait (liveness.h).
  std::vector<int> world_ranks;
  std::uint64_t ident = 0;
  CommOptions options;
  /// The communicator this one was split from (null for a world): a failure
  /// here breaks it too, so the Runtime sees it and aborts.
  std::shared_ptr<Impl> parent;
  /// Whether ~Impl frees `comm`. A group's is freed by an op on the comm
  /// thread instead (see ~Communicator), since the frontend must not call
  /// MPI while that thread may.
  bool free_in_destructor = true;
  std::uint64_t next_seq = 0;  // frontend only
  /// Collectives on CUDA tensors (NCCL) are numbered apart: they run on the
  /// GPUs' comm streams, not on the comm thread, and are not in the desync
  /// check's sequence. Frontend only.
  std::uint64_t next_device_seq = 0;
  /// This communicator's NCCL communicators, made at the first collective
  /// on a set of GPUs: one GPU for a one-tensor collective, the tensors'
  /// GPUs in order for the several-device all-reduce. Frontend only
  /// (kernels hold their own references).
  struct NcclSet {
    std::vector<int> devices;
    std::vector<std::shared_ptr<detail::NcclComm>> comms;  // one per device
  };
  std::vector<NcclSet> nccl;
  std::atomic<bool> broken{false};
  std::mutex mutex;
  std::string broken_reason;  // guarded by mutex
  bool diagnosed = false;     // broken_reason names a desync; guarded by mutex

  ~Impl();

  /// "2 ranks" for a world, "group of 2 ranks" for a split.
  std::string peers() const;
  bool is_broken() const;
  /// Why this communicator (or the one it was split from) is broken; "" if not.
  std::string failure();
  /// Throws CommError if broken.
  void check_usable();
  /// Breaks this communicator and those it was split from, and throws
  /// CommError(what). `diagnosis` marks a desync found by a check: it goes
  /// first in the reason, ahead of a failure it explains (unless a desync
  /// was named already).
  [[noreturn]] void fail(const std::string& what, bool diagnosis = false);
  /// An MPI call of `what` returned `rc`: breaks the communicator.
  [[noreturn]] void mpi_failed(int rc, const char* expr, const detail::CollectiveId& what);
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
  void collective(const detail::CollectiveId& what, std::size_t bytes, StartNonBlocking start, Blocking blocking) {
    if (bytes < kBlockingFromBytes) {
      MPI_Request req;
      if (int rc = start(&req); rc != MPI_SUCCESS) mpi_failed(rc, "the non-blocking MPI call", what);
      wait(req, what);
      detail::liveness_leave();
      return;
    }
    const auto began = std::chrono::steady_clock::now();
    arrive(what);
    int rc = MPI_SUCCESS;
    {
      const double arrived_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      detail::BlockingDeadline deadline(world_rank, deadline_after(began),
                                        [this, what, bytes, arrived_s] { return overdue(what, bytes, arrived_s); });
      rc = blocking();
    }
    if (rc != MPI_SUCCESS) mpi_failed(rc, "the blocking MPI call", what);
    detail::liveness_leave();
  }
  static constexpr std::size_t kBlockingFromBytes = 64 << 10;

  /// Polls `req` until done or the deadline; meanwhile progresses posted
  /// desync checks (so a collective that hangs because ranks diverged is
  /// named by the check, not by the timeout). Once the wait is past its
  /// first spin it answers other ranks' roll calls; every kLookEvery_s it
  /// looks at the members' processes on this host (one that is gone fails
  /// the wait at once, naming it), and past kRollCallAfter_s it holds its
  /// own roll call, so that a timeout names the members that did not
  /// arrive. Comm thread.
  void wait(MPI_Request& req, const detail::CollectiveId& what) { wait(&req, 1, what); }
  /// The same for `n` requests, done when all are.
  void wait(MPI_Request* reqs, int n, const detail::CollectiveId& what);
  static constexpr double kLookEvery_s = 0.25;
  static constexpr double kRollCallAfter_s = 1.0;
  /// Fail a wait: members `gone` have vanished, or the deadline passed.
  [[noreturn]] void vanished(const detail::CollectiveId& what, const std::vector<int>& gone, double waited_s);
  [[noreturn]] void timed_out(const detail::CollectiveId& what, detail::RollCall& roll);
  /// `began` plus the timeout (clamped, so that any TIDE_COMM_TIMEOUT fits).
  std::chrono::steady_clock::time_point deadline_after(std::chrono::steady_clock::time_point began) const;
  /// The watchdog's message for a blocking collective of `bytes` that every
  /// rank arrived at after `arrived_s` and that is past its deadline. Called
  /// on the watchdog thread: reads only what is fixed at creation, no MPI.
  std::string overdue(const detail::CollectiveId& what, std::size_t bytes, double arrived_s) const;
  /// A polled, timed rendezvous of every rank that also compares what each
  /// is about to run (an all-gather of sequence number and signature): a
  /// mismatch fails here, on every rank, before any blocking MPI call. Up to
  /// kPointToPointArrival ranks it is made of point-to-point messages (a
  /// few microseconds less than MPI's non-blocking all-gather, which is most
  /// of what a large collective costs beyond MPI's own call); above, the
  /// all-gather (its messages grow as log p, not p).
  void arrive(const detail::CollectiveId& what);
  static constexpr int kPointToPointArrival = 8;
  static constexpr int kArrivalTag = 77;

  // ---- Desync check (sync_check.cc) ----------------------------------------
  static constexpr std::size_t kWindow = 256;
  /// TIDE_DESYNC_CHECK and more than one rank over MPI; set at creation.
  bool check_enabled = false;
  // Frontend only.
  std::uint64_t hash = 0;
  std::uint64_t window_base = 0;
  std::vector<detail::CollectiveSig> window;  // reserved to kWindow
  std::uint64_t checks_posted = 0;
  std::uint64_t device_hash = 0;  // GPU collectives: hash, first of the window, window
  std::uint64_t device_window_base = 0;
  std::vector<detail::CollectiveSig> device_window;
  // Frontend to comm thread.
  std::mutex check_mutex;
  std::deque<SyncCheck> check_queue;             // guarded by check_mutex
  std::atomic<std::uint64_t> checks_ready{0};    // pushed on check_queue so far
  std::atomic<bool> check_failed{false};         // no more checks: one failed
  /// The first exchange, per rank: count, hash, broken, decided, first skip,
  /// GPU collectives' count and hash, skips agreed (every skip below it was
  /// found skipped on every rank and forgotten).
  static constexpr int kWords = 8;
  std::array<std::uint64_t, kWords> check_mine{};
  std::vector<std::uint64_t> check_all;
  // Comm thread only (set up before the comm thread can see this Impl).
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
  // Comm thread: which collectives ran. A collective whose input comes from
  // a failed op is skipped by the engine (its kernel never runs): fine when
  // every rank skips it, a desync when only some do (the others wait in it).
  std::uint64_t decided = 0;                // collectives before this one ran or were skipped
  std::deque<std::uint64_t> skipped;        // skipped here, not yet seen skipped on every rank
  /// One past the last skip found skipped on every rank (and popped from
  /// `skipped`). Checks and rechecks interleave differently on each rank, so
  /// a rank may have forgotten a skip that another still reports: this word
  /// tells the judge that it skipped it too.
  std::uint64_t agreed_skips = 0;
  static constexpr std::size_t kMaxSkipped = 1024;

  /// At the start of every collective's kernel (comm thread): the ones
  /// between the last that ran and this one were skipped.
  void running(const detail::CollectiveId& what) {
    if (mpi) detail::liveness_enter(ident, what, size, parent != nullptr);
    if (!check_enabled) return;
    note_skipped_before(what.seq);
    decided = what.seq + 1;
  }
  void note_skipped_before(std::uint64_t seq) {
    for (; decided < seq; ++decided)
      if (skipped.size() < kMaxSkipped) skipped.push_back(decided);
  }

  /// The signatures of the last kHistory collectives pushed, by sequence
  /// number: written by the frontend at push, read by the comm thread to
  /// name a collective that one rank skipped (found a few checks late,
  /// perhaps). A slot's tag is its sequence number, cleared while it is
  /// rewritten, so a slot reused since reads as unknown.
  struct SigSlot {
    std::atomic<std::uint64_t> seq{~std::uint64_t{0}};
    std::atomic<std::uint64_t> w[3] = {0, 0, 0};
  };
  static constexpr std::size_t kHistory = 4096;
  std::unique_ptr<SigSlot[]> history;
  /// Comm thread: collective `seq` described ("all_reduce (1000 x f32,
  /// sum)"), or "" when the history no longer holds it.
  std::string describe(std::uint64_t seq) const;

  /// Frontend, at every collective's push: its id, with the next sequence
  /// number; its signature is chained into the hash.
  detail::CollectiveId begin(detail::CollectiveKind kind, std::int64_t count = -1, DType dtype = DType::f32,
                             int op = -1, int root = -1, int devices = 0) {
    // MPI counts are ints: refused here, before anything is numbered or pushed.
    if (mpi && count > std::numeric_limits<int>::max())
      throw ValueError(std::string(detail::collective_kind_name(kind)) + ": " + std::to_string(count) + " x " +
                       dtype_name(dtype) + " is more than MPI's largest count (" +
                       std::to_string(std::numeric_limits<int>::max()) + " elements per rank); split the tensor");
    detail::CollectiveId id;
    id.kind = kind;
    id.seq = next_seq++;
    id.count = count;
    id.dtype = dtype;
    id.op = static_cast<std::int8_t>(op);
    id.root = root;
    id.devices = devices;
    if (check_enabled) {
      const detail::CollectiveSig s = id.sig();
      hash = detail::chain_hash(hash, s);
      if (window.size() < kWindow) window.push_back(s);
      SigSlot& slot = history[id.seq % kHistory];
      slot.seq.store(~std::uint64_t{0}, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_release);
      for (int i = 0; i < 3; ++i) slot.w[i].store(s.w[i], std::memory_order_relaxed);
      slot.seq.store(id.seq, std::memory_order_release);
    }
    return id;
  }
  /// Frontend, at every GPU collective's push (its id numbered by
  /// next_device_seq): chained into the GPU collectives' own hash.
  void note_device(const detail::CollectiveId& id) {
    if (!check_enabled) return;
    const detail::CollectiveSig s = id.sig();
    device_hash = detail::chain_hash(device_hash, s);
    if (device_window.size() < kWindow) device_window.push_back(s);
  }
  /// Turns checking on if `options` and the size allow it (at creation).
  void enable_checks();
  /// Frontend: posts a check of the sequence so far and pushes its op.
  void post_check(const std::shared_ptr<Impl>& self, Engine& e, Loc loc);
  /// Frontend: pushes an op that waits for every posted check to finish.
  void push_finish_checks(const std::shared_ptr<Impl>& self, Engine& e, Loc loc);
  /// Comm thread: starts the next posted check, tests the one in flight and
  /// judges it when done (a desync fails here). Never blocks on peers
  /// except to name a desync already found.
  void poll_checks();
  /// poll_checks on this communicator and those it was split from.
  void poll_all_checks();
  /// Comm thread, the check op: waits (timed) for the checks before `index`
  /// and starts check `index` (of the first `count` collectives), which
  /// completes in later polls.
  void run_check(std::uint64_t index, std::uint64_t count);
  /// Comm thread: waits (timed) until every posted check has finished.
  void finish_checks();

 private:
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
  [[noreturn]] void check_mpi_failed(int rc, const char* expr);
};

}  // namespace tide
