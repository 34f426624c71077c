// The desync check. Each communicator chains the signature of every
// collective pushed on it into a hash (frontend, a few nanoseconds per
// collective) and keeps the first kWindow signatures since the last check.
// check_sync() posts (count, hash, window) for the comm thread and pushes one
// op on the comm stream; that op, or any collective waiting for its peers
// meanwhile, starts an all-gather of kWords words per rank on a duplicate
// communicator reserved for checks, so that a check never matches a data
// collective even when the data collectives are out of step. The check op
// does not wait for its own exchange: the next check op (or a poll during a
// later wait) finishes it, so a step pays the start of a small all-gather
// on the comm stream, not its latency.
//
// The words: the count and hash of the collectives pushed (the same on
// every rank whenever they are checked, however far each comm thread has
// got), whether this rank's communicator is broken, and which collectives
// its comm thread has decided so far (run or skipped), the first it
// skipped that not every rank is known to have skipped too, and how far the
// skips known skipped everywhere go. Those depend on timing, so skips are
// compared only over collectives that every rank involved has decided; a
// skip that some rank has not decided yet is judged again by a recheck.
//
// When the ranks differ, every rank sees the same gathered words, so all of
// them go on to a second all-gather (the windows and the reasons of ranks
// already broken) and name the first differing collective the same way.
#include "sync_check.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include <tide/comm/mpi_check.h>

#include "../health/liveness.h"
#include "../mpi/mpi_group.h"
#include "../mpi/poller.h"

namespace tide::detail {

namespace {

// The second exchange: per rank, these words, then the window, then the GPU
// collectives' window, then the reason text.
constexpr std::uint64_t kNone = ~std::uint64_t{0};
// base, count, hash, broken, window size, reason bytes; then the GPU
// collectives' base, count, hash and window size.
constexpr std::size_t kHeaderWords = 10;
constexpr std::size_t kWindowWords = 3 * SyncChecker::kWindow;
constexpr std::size_t kReasonBytes = 512;
constexpr std::size_t kRecordWords = kHeaderWords + 2 * kWindowWords + kReasonBytes / sizeof(std::uint64_t);

}  // namespace

void SyncChecker::enable() {
  enabled_ = options_.desync_check && mpi_.active && mpi_.size > 1;
  if (!enabled_) return;
  host_seq.window.reserve(kWindow);
  device_seq.window.reserve(kWindow);
  history_.enable();
  for (MPI_Comm* dup : {&check_comm, &recheck_comm}) {
    if (int rc = MPI_Comm_dup(mpi_.comm, dup); rc != MPI_SUCCESS) {
      enabled_ = false;
      health_.fail("MPI_Comm_dup for the desync check failed on rank " + std::to_string(mpi_.rank) + ": " +
                   mpi_error_text(rc));
    }
  }
}

void SyncChecker::note_host(const CollectiveId& id) {
  if (!enabled_) return;
  const CollectiveSig s = id.sig();
  host_seq.note(s);
  history_.record(id.seq, s);
}

void SyncChecker::note_device(const CollectiveId& id) {
  if (!enabled_) return;
  device_seq.note(id.sig());
}

std::optional<SyncChecker::Posted> SyncChecker::post(std::uint64_t next_seq, std::uint64_t next_device_seq) {
  // Nothing pushed since the last check: nothing to compare, and no check,
  // so that ranks may take extra steps without collectives (the checks pair
  // up by the steps that pushed some).
  if (!enabled_ || (next_seq == host_seq.base && next_device_seq == device_seq.base) ||
      check_failed.load(std::memory_order_acquire))
    return std::nullopt;
  SyncCheck c;
  c.index = checks_posted;
  host_seq.hand_over(next_seq, c.base, c.count, c.hash, c.window);
  device_seq.hand_over(next_device_seq, c.device_base, c.device_count, c.device_hash, c.device_window);
  {
    std::lock_guard<std::mutex> lock(check_mutex);
    check_queue.push_back(std::move(c));
  }
  checks_ready.fetch_add(1, std::memory_order_release);
  const std::uint64_t index = checks_posted++;
  return Posted{index, next_seq};
}

void SyncChecker::start_check() {
  {
    std::lock_guard<std::mutex> lock(check_mutex);
    current = std::move(check_queue.front());
    check_queue.pop_front();
  }
  ++checks_started;
  check_mine = {current.count,
                current.hash,
                health_.is_broken() ? 1u : 0u,
                decided,
                skipped.empty() ? kNone : skipped.front(),
                current.device_count,
                current.device_hash,
                agreed_skips};
  check_all.assign(kWords * static_cast<std::size_t>(mpi_.size), 0);
  if (int rc = MPI_Iallgather(check_mine.data(), kWords, MPI_UINT64_T, check_all.data(), kWords, MPI_UINT64_T,
                              check_comm, &check_req);
      rc != MPI_SUCCESS)
    check_mpi_failed(rc, "MPI_Iallgather");
  check_in_flight = true;
}

void SyncChecker::poll() {
  if (!enabled_ || check_failed.load(std::memory_order_relaxed)) return;
  poll_recheck();
  if (!check_in_flight) {
    if (checks_started == checks_ready.load(std::memory_order_acquire)) return;
    start_check();
  }
  int done = 0;
  if (int rc = MPI_Test(&check_req, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) check_mpi_failed(rc, "MPI_Test");
  if (!done) {
    // The second exchange is polled like the first (no exchange of the check
    // blocks: a peer may be inside a blocking collective that needs this
    // rank to progress), but it has a deadline of its own.
    if (naming_difference &&
        std::chrono::steady_clock::now() > mpi_.deadline_after(naming_since))
      check_timed_out("naming the difference", mpi_.timeout_s());
    return;
  }
  check_in_flight = false;
  if (naming_difference) name_difference();  // fails
  judge_check();  // may start the second exchange, and then is not finished
  if (!check_in_flight) ++checks_finished;
}

bool SyncChecker::busy_any() const {
  for (const SyncChecker* c = this; c; c = c->parent_)
    if (c->enabled_ && !c->check_failed.load(std::memory_order_relaxed) &&
        (c->check_in_flight || c->checks_started < c->checks_ready.load(std::memory_order_acquire) ||
         c->rechecks_owed > 0 || c->recheck_in_flight))
      return true;
  return false;
}

void SyncChecker::poll_recheck() {
  using clock = std::chrono::steady_clock;
  if (!recheck_in_flight) {
    if (rechecks_owed == 0 || clock::now() < recheck_at) return;
    --rechecks_owed;
    recheck_mine = {current.count, current.hash, 0, decided, skipped.empty() ? kNone : skipped.front(),
                    0,             0,            agreed_skips};
    recheck_all.assign(kWords * static_cast<std::size_t>(mpi_.size), 0);
    if (int rc = MPI_Iallgather(recheck_mine.data(), kWords, MPI_UINT64_T, recheck_all.data(), kWords,
                                MPI_UINT64_T, recheck_comm, &recheck_req);
        rc != MPI_SUCCESS)
      check_mpi_failed(rc, "MPI_Iallgather");
    recheck_in_flight = true;
  }
  int done = 0;
  if (int rc = MPI_Test(&recheck_req, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) check_mpi_failed(rc, "MPI_Test");
  if (!done) return;
  recheck_in_flight = false;
  bool undecided = false;
  if (const std::string skips = judge_skips(recheck_all, undecided); !skips.empty()) fail_skips(skips, "a recheck");
  if (undecided) {
    // Still waiting for a rank to reach the collective: ask again, less
    // often the longer it takes (a rank may be computing for a while).
    ++rechecks_owed;
    recheck_pause = std::min(std::chrono::microseconds(50000),
                             std::max(std::chrono::microseconds(500), recheck_pause * 2));
    recheck_at = clock::now() + recheck_pause;
  } else {
    recheck_pause = std::chrono::microseconds(0);
  }
}

void SyncChecker::note_skips(std::uint64_t seq) {
  for (; decided < seq; ++decided) {
    if (enabled_ && skipped.size() < kMaxSkipped) skipped.push_back(decided);
    // A peer waiting in this collective learns of the skip by a roll call,
    // even when no later check is exchanged.
    liveness_skipped(mpi_.ident, decided);
  }
}

void SyncChecker::poll_all() {
  for (SyncChecker* p = this; p; p = p->parent_) p->poll();
}

std::string SyncChecker::judge_skips(const std::vector<std::uint64_t>& all, bool& undecided) {
  // s: the first collective some rank skipped and not every rank is known
  // to have skipped. A rank that has decided s (run or skipped it) either
  // skipped it too (its first unagreed skip is s) or ran it.
  undecided = false;
  std::uint64_t s = kNone;
  for (int r = 0; r < mpi_.size; ++r) s = std::min(s, all[kWords * static_cast<std::size_t>(r) + 4]);
  if (s == kNone) return "";
  std::vector<int> ran, skippers;
  bool all_decided = true;
  for (int r = 0; r < mpi_.size; ++r) {
    const std::uint64_t* w = &all[kWords * static_cast<std::size_t>(r)];
    if (w[3] <= s) {
      all_decided = false;
    } else {
      (w[4] == s || w[7] > s ? skippers : ran).push_back(r);
    }
  }
  if (!ran.empty()) {
    // Skips are seen as of when each rank started the check, so one may be
    // found some checks late: its signature comes from the history.
    std::string what = "collective #" + std::to_string(s);
    if (const std::string d = history_.describe(s); !d.empty()) what += " (" + d + ")";
    return what + " was skipped on " + rank_list(skippers) +
           ", because its input comes from a failed op (that rank's error names it), and run on " +
           rank_list(ran) + ": the ranks' collectives no longer pair up";
  }
  // Skipped everywhere: the sequences still pair up. Every rank saw the same
  // words, so every rank forgets it here.
  if (all_decided && !skipped.empty() && skipped.front() == s) {
    skipped.pop_front();
    agreed_skips = std::max(agreed_skips, s + 1);
  }
  // Not every rank has reached it: a later exchange must judge it, and there
  // may be no later check (they can all be posted and done before then).
  undecided = !all_decided;
  return "";
}

void SyncChecker::fail_skips(const std::string& skips, const char* by) {
  check_failure = skips + " (" + by + " of desync check #" + std::to_string(current.index) + " on rank " +
                  std::to_string(mpi_.rank) + " of " + mpi_.peers() + ")";
  check_failed.store(true, std::memory_order_release);
  health_.fail(check_failure, true);
}

void SyncChecker::judge_check() {
  bool agree = true;
  for (int r = 0; r < mpi_.size; ++r) {
    const std::uint64_t* w = &check_all[kWords * static_cast<std::size_t>(r)];
    agree = agree && w[0] == check_mine[0] && w[1] == check_mine[1] && w[2] == 0 && w[5] == check_mine[5] &&
            w[6] == check_mine[6];
  }
  bool undecided = false;
  if (const std::string skips = judge_skips(check_all, undecided); !skips.empty()) fail_skips(skips, "the exchange");
  if (undecided) ++rechecks_owed;
  if (!agree) start_difference();
}

void SyncChecker::start_difference() {
  // Every rank saw the same words, so every rank starts this exchange next:
  // what is needed to name the difference.
  std::vector<std::uint64_t>& mine = difference_mine;
  mine.assign(kRecordWords, 0);
  mine[0] = current.base;
  mine[1] = current.count;
  mine[2] = current.hash;
  mine[3] = check_mine[2];
  mine[4] = current.window.size();
  const std::string reason = check_mine[2] ? health_.failure() : "";
  const std::size_t reason_bytes = std::min(reason.size(), kReasonBytes);
  mine[5] = reason_bytes;
  mine[6] = current.device_base;
  mine[7] = current.device_count;
  mine[8] = current.device_hash;
  mine[9] = current.device_window.size();
  for (std::size_t i = 0; i < current.window.size(); ++i)
    for (std::size_t w = 0; w < 3; ++w) mine[kHeaderWords + 3 * i + w] = current.window[i].w[w];
  for (std::size_t i = 0; i < current.device_window.size(); ++i)
    for (std::size_t w = 0; w < 3; ++w) mine[kHeaderWords + kWindowWords + 3 * i + w] = current.device_window[i].w[w];
  std::memcpy(&mine[kHeaderWords + 2 * kWindowWords], reason.data(), reason_bytes);
  difference_all.assign(kRecordWords * static_cast<std::size_t>(mpi_.size), 0);
  if (int rc = MPI_Iallgather(mine.data(), static_cast<int>(kRecordWords), MPI_UINT64_T, difference_all.data(),
                              static_cast<int>(kRecordWords), MPI_UINT64_T, check_comm, &check_req);
      rc != MPI_SUCCESS)
    check_mpi_failed(rc, "MPI_Iallgather");
  check_in_flight = true;
  naming_difference = true;
  naming_since = std::chrono::steady_clock::now();
}

void SyncChecker::name_difference() {
  const std::vector<std::uint64_t>& all = difference_all;
  std::vector<CheckRecord> records(static_cast<std::size_t>(mpi_.size)), device(records.size());
  for (std::size_t r = 0; r < records.size(); ++r) {
    const std::uint64_t* w = &all[kRecordWords * r];
    CheckRecord& rec = records[r];
    rec.base = w[0];
    rec.count = w[1];
    rec.hash = w[2];
    rec.broken = w[3] != 0;
    rec.window.resize(std::min<std::uint64_t>(w[4], kWindow));
    for (std::size_t i = 0; i < rec.window.size(); ++i)
      for (std::size_t k = 0; k < 3; ++k) rec.window[i].w[k] = w[kHeaderWords + 3 * i + k];
    rec.reason.assign(reinterpret_cast<const char*>(&w[kHeaderWords + 2 * kWindowWords]),
                      std::min<std::uint64_t>(w[5], kReasonBytes));
    CheckRecord& dev = device[r];  // never broken: the host record says that
    dev.base = w[6];
    dev.count = w[7];
    dev.hash = w[8];
    dev.window.resize(std::min<std::uint64_t>(w[9], kWindow));
    for (std::size_t i = 0; i < dev.window.size(); ++i)
      for (std::size_t k = 0; k < 3; ++k) dev.window[i].w[k] = w[kHeaderWords + kWindowWords + 3 * i + k];
  }
  std::string what = diagnose(records);
  if (const std::string gpu = diagnose(device); !gpu.empty())
    what = (what.empty() ? "" : what + "; ") + "in the collectives on GPUs (NCCL, numbered apart): " + gpu;
  if (what.empty()) what = "the ranks' collective sequences differ";  // cannot happen: they did not agree
  check_failure = what + " (desync check #" + std::to_string(current.index) + " on rank " + std::to_string(mpi_.rank) +
                  " of " + mpi_.peers() + ")";
  check_failed.store(true, std::memory_order_release);
  health_.fail(check_failure, true);
}

void SyncChecker::check_mpi_failed(int rc, const char* expr) {
  check_failed.store(true, std::memory_order_release);
  check_failure = "desync check #" + std::to_string(current.index) + ": " + expr + " failed on rank " +
                  std::to_string(mpi_.rank) + ": " + mpi_error_text(rc);
  health_.fail(check_failure);
}

void SyncChecker::check_timed_out(const char* during, double waited_s) {
  check_failed.store(true, std::memory_order_release);
  std::ostringstream os;
  os << "desync check #" << current.index << " timed out " << during << " after " << waited_s
     << " s on rank " << mpi_.rank << " of " << mpi_.peers()
     << ": a peer has not reached the matching check (each rank checks at step() or check_sync() when it "
        "pushed collectives since its last check, and those must match), or it is stuck";
  check_failure = os.str();
  health_.fail(check_failure);
}

void SyncChecker::fail_if_told(double& told_at_s, double waited_s) {
  const std::string told = told_failure();
  if (told.empty()) return;
  // The checks being waited for may still name a desync behind the told
  // failure (every rank takes part in them): they get a moment first.
  if (told_at_s < 0) told_at_s = waited_s;
  if (waited_s - told_at_s >= MpiGroup::kToldGrace_s) health_.fail(told);
}

double SyncChecker::check_wait_s() const {
  // Once the communicator is broken (a collective timed out, say) a check
  // can only name a desync that explains the failure, and peers that are
  // alive answer within milliseconds: they poll checks in their own waits.
  // A full timeout here would double the time to report the failure.
  return health_.is_broken() ? std::min(mpi_.timeout_s(), kBrokenCheckWait_s) : mpi_.timeout_s();
}

void SyncChecker::run(std::uint64_t index, std::uint64_t count) {
  if (check_failed.load(std::memory_order_relaxed))
    throw CommError(check_failure.empty() ? "an earlier desync check failed" : check_failure);
  // The comm stream runs in order: every collective pushed before this check
  // has run or been skipped by now.
  note_skipped_before(count);
  const double limit_s = check_wait_s();
  Poller poller(limit_s);
  double told_at_s = -1;
  while (checks_finished < index) {
    poll();
    if (checks_finished >= index) break;
    if (poller.periodic() && poller.slow()) serve_queries(true);  // roll calls of others, failures told
    fail_if_told(told_at_s, poller.waited_s());
    if (!poller.next()) check_timed_out("waiting for the peers", limit_s);
  }
  poll();  // starts this one (unless a wait already did); a later poll finishes it
}

void SyncChecker::finish() {
  if (check_failed.load(std::memory_order_relaxed)) return;
  const double limit_s = check_wait_s();
  Poller poller(limit_s);
  double told_at_s = -1;
  // Rechecks too: a skip judged undecided by the last check is judged here,
  // once every rank has drained its collectives.
  const auto pending = [&] {
    return checks_finished < checks_ready.load(std::memory_order_acquire) || rechecks_owed > 0 || recheck_in_flight;
  };
  while (pending()) {
    poll();
    if (!pending()) break;
    if (poller.periodic() && poller.slow()) serve_queries(true);  // roll calls of others, failures told
    fail_if_told(told_at_s, poller.waited_s());
    if (!poller.next()) check_timed_out("waiting for the peers", limit_s);
  }
}


void SyncChecker::free_comms() {
  if (check_comm != MPI_COMM_NULL) TIDE_MPI_CHECK(MPI_Comm_free(&check_comm));
  if (recheck_comm != MPI_COMM_NULL) TIDE_MPI_CHECK(MPI_Comm_free(&recheck_comm));
}

void SyncChecker::free_comms_at_exit() {
  // A check still in flight (or stuck) keeps its communicator: freeing it
  // under a pending request is not allowed.
  if (check_comm != MPI_COMM_NULL && !check_in_flight) MPI_Comm_free(&check_comm);
  if (recheck_comm != MPI_COMM_NULL && !recheck_in_flight) MPI_Comm_free(&recheck_comm);
}

}  // namespace tide::detail
