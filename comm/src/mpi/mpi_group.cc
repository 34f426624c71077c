#include "mpi_group.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <sstream>
#include <thread>

#include <tide/comm/mpi_check.h>
#include <tide/core/assert.h>

#include "poller.h"

namespace tide::detail {

std::string MpiGroup::peers() const {
  return (split_ ? "group of " : "") + std::to_string(size) + (size == 1 ? " rank" : " ranks");
}

std::string MpiGroup::where() const {
  std::string s = "rank " + std::to_string(rank) + " of " + (split_ ? "the " : "") + peers();
  if (split_) s += " (world rank " + std::to_string(world_rank) + ")";
  return s;
}

void MpiGroup::mpi_failed(int rc, const char* expr, const CollectiveId& what) {
  held_ = nullptr;  // this failure is the one to report
  health_.fail(what.str(peers()) + ": " + expr + " failed on rank " + std::to_string(rank) + ": " + mpi_error_text(rc));
}

void MpiGroup::wait(MPI_Request* reqs, int n, const CollectiveId& what, MPI_Status* statuses) {
  Poller poller(timeout_s_);
  RollCall roll;  // held only once the wait is long
  double next_look_s = kLookEvery_s;
  double next_ask_s = kRollCallAfter_s;
  double held_at_s = 0;
  double told_at_s = -1;  // when a peer's failure was first heard here
  for (;;) {
    int done = 0;
    if (int rc = MPI_Testall(n, reqs, &done, statuses); rc != MPI_SUCCESS)
      mpi_failed(rc, "MPI_Test", what);
    if (done) return;
    // A collective that hangs because the ranks pushed different sequences
    // waits here: a desync check posted meanwhile can name the divergence
    // long before the deadline.
    if (poller.periodic()) {
      if (on_poll && !held_) {
        if (!hold_poll_failures_) {
          on_poll();
        } else {
          try {
            on_poll();
          } catch (...) {
            held_ = std::current_exception();
            held_at_s = poller.waited_s();
          }
        }
      }
      // Peers inside the blocking call would have had this rank's arrival
      // long ago, and theirs would be here: past the grace, none is.
      if (held_ && poller.waited_s() - held_at_s > kHeldGrace_s) rethrow_held();
      if (poller.slow()) {
        serve_queries();
        // A peer broke the world and said why: it will not join this. The
        // desync checks in flight get a moment to name a desync behind it
        // (on_poll above runs them); the failure is held like theirs while
        // arrive() waits (peers that have this rank's arrival may be in the
        // blocking call already).
        if (!held_)
          if (const std::string told = told_failure(); !told.empty()) {
            if (told_at_s < 0) told_at_s = poller.waited_s();
            const bool checks_may_name_it =
                checks_busy && checks_busy() && poller.waited_s() - told_at_s < kToldGrace_s;
            if (!checks_may_name_it) {
              try {
                health_.fail(told);
              } catch (...) {
                if (!hold_poll_failures_) throw;
                held_ = std::current_exception();
                held_at_s = poller.waited_s();
              }
            }
          }
        roll.collect();
        if (roll.asked())
          if (const std::string skip = roll.skip_found(ident, what); !skip.empty()) health_.fail(skip, true);
        if (const double waited = poller.waited_s(); waited >= next_look_s) {
          next_look_s = waited + kLookEvery_s;
          // Asked again every kRollCallAfter_s: a peer that was computing
          // at the last call may be waiting somewhere telling by now.
          if (waited >= next_ask_s) {
            roll.ask(world_ranks, rank);
            next_ask_s = waited + kRollCallAfter_s;
          }
          const std::vector<int> gone = gone_members(world_ranks, rank);
          if (!gone.empty()) vanished(what, gone, waited);
        }
      }
    }
    if (!poller.next()) timed_out(what, roll);
  }
}

void MpiGroup::vanished(const CollectiveId& what, const std::vector<int>& gone, double waited_s) {
  std::ostringstream os;
  os << what.str(peers()) << " on " << where();
  os << ": " << (gone.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < gone.size(); ++i) {
    os << (i ? ", " : "") << gone[i];
    if (split_) os << " (world rank " << world_ranks[static_cast<std::size_t>(gone[i])] << ")";
  }
  os << " vanished: " << (gone.size() == 1 ? "its process is" : "their processes are")
     << " gone from this host (seen after waiting " << static_cast<int>(waited_s * 100) / 100.0 << " s)";
  health_.fail(os.str());
}

void MpiGroup::timed_out(const CollectiveId& what, RollCall& roll) {
  if (!roll.asked()) {
    // A timeout shorter than the roll call's delay: ask now, and give the
    // answers a moment.
    roll.ask(world_ranks, rank);
    for (int i = 0; i < 50; ++i) {
      serve_queries();
      roll.collect();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  roll.collect();
  std::ostringstream os;
  os << what.str(peers()) << " timed out after " << timeout_s_ << " s on " << where();
  const std::string absent = roll.absent(ident, what, peers());
  if (absent.empty()) {
    os << ": every rank is in it, yet it did not complete (a stalled network or MPI?)";
  } else {
    os << ": " << absent;
  }
  health_.fail(os.str());
}

std::chrono::steady_clock::time_point MpiGroup::deadline_after(
    std::chrono::steady_clock::time_point began) const {
  constexpr double kLongest_s = 1e9;  // about 30 years: "never", without overflow
  const double s = std::min(std::max(timeout_s_, 0.0), kLongest_s);
  return began + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

namespace {
std::string bytes_text(std::size_t bytes) {
  std::ostringstream os;
  if (bytes >= (std::size_t{1} << 30)) {
    os << static_cast<double>(bytes) / static_cast<double>(std::size_t{1} << 30) << " GiB";
  } else if (bytes >= (std::size_t{1} << 20)) {
    os << static_cast<double>(bytes) / static_cast<double>(std::size_t{1} << 20) << " MiB";
  } else {
    os << bytes / 1024.0 << " KiB";
  }
  return os.str();
}
}  // namespace

std::string MpiGroup::overdue(const CollectiveId& what, std::size_t bytes, double arrived_s) const {
  std::ostringstream os;
  os << what.str(peers()) << " timed out after " << timeout_s_ << " s on " << where();
  os << ": every rank had arrived at it " << static_cast<double>(static_cast<long>(arrived_s * 1e4)) / 10
     << " ms after it began, then MPI's blocking transfer of " << bytes_text(bytes)
     << " did not complete; not heard from since: ";
  for (int m = 0, listed = 0; m < size; ++m) {
    if (m == rank) continue;
    os << (listed++ ? ", " : "") << "rank " << m;
    const int world = world_ranks.empty() ? m : world_ranks[static_cast<std::size_t>(m)];
    if (split_) os << " (world rank " << world << ")";
    if (const std::string note = process_note(world); !note.empty()) os << " (" << note << ")";
  }
  return os.str();
}

namespace {

/// Ranks at different sequence numbers in one exchange: every rank pushes
/// the same collectives, so the ones ahead decided the earliest of them
/// without running it, which the engine does only to a collective whose
/// input comes from a failed op. Named as the desync check names a skip;
/// "" when every rank is at the same collective.
std::string skip_in(const std::vector<std::uint64_t>& seqs, const std::vector<CollectiveSig>& sigs) {
  const auto first = std::min_element(seqs.begin(), seqs.end());
  if (first == seqs.end() || std::all_of(seqs.begin(), seqs.end(), [&](std::uint64_t q) { return q == *first; }))
    return "";
  std::vector<int> ran, skipped;
  for (std::size_t r = 0; r < seqs.size(); ++r) (seqs[r] == *first ? ran : skipped).push_back(static_cast<int>(r));
  const auto at = static_cast<std::size_t>(first - seqs.begin());
  return "collective #" + std::to_string(*first) + " (" + CollectiveId::from_sig(sigs[at], *first).describe() +
         ") was skipped on " + rank_list(skipped) +
         ", because its input comes from a failed op (that rank's error names it), and run on " + rank_list(ran) +
         ": the ranks' collectives no longer pair up";
}

/// What differs among the ranks' headers: a skip (some rank ahead), else
/// the collectives that differ; "" when nothing does.
std::string mismatch_in(const std::vector<std::uint64_t>& seqs, const std::vector<CollectiveSig>& sigs) {
  const std::string skip = skip_in(seqs, sigs);
  return skip.empty() ? diagnose_arrival(seqs, sigs) : skip;
}

}  // namespace

struct MpiGroup::Exchange {
  /// Rank r's message (header, then payload) at r * kSlot; this rank's is
  /// the one it sends.
  static constexpr std::size_t kSlot = kHeaderBytes + kExchangeBytes;
  alignas(64) unsigned char slots[kPointToPointArrival * kSlot];
  const unsigned char* parts[kPointToPointArrival];
  MPI_Request reqs[2 * kPointToPointArrival];
  MPI_Status statuses[2 * kPointToPointArrival];
  unsigned char* slot(int r) { return slots + static_cast<std::size_t>(r) * kSlot; }
};

MpiGroup::~MpiGroup() { delete exchange_; }

const unsigned char* const* MpiGroup::exchange(const CollectiveId& what, const void* payload, std::size_t bytes,
                                               bool hold) {
  held_ = nullptr;  // a caller that did not rethrow it: the communicator is broken all the same
  hold_poll_failures_ = hold;
  struct Unhold {
    MpiGroup& g;
    ~Unhold() { g.hold_poll_failures_ = false; }
  } unhold{*this};
  const CollectiveSig s = what.sig();
  const std::uint64_t header[4] = {what.seq, s.w[0], s.w[1], s.w[2]};
  if (size > kPointToPointArrival) {
    // Too many peers for a message each: the all-gather of the headers
    // (its messages grow as log p, not p), with no payload.
    TIDE_INTERNAL_ASSERT(bytes == 0, "an exchange with a payload among more than kPointToPointArrival ranks");
    // The send buffer too lives on the heap: a failed wait leaves all three
    // to MPI.
    auto mine = std::make_unique<std::array<std::uint64_t, 4>>();
    std::copy(std::begin(header), std::end(header), mine->begin());
    auto all = std::make_unique<std::vector<std::uint64_t>>(4 * static_cast<std::size_t>(size));
    auto req = std::make_unique<MPI_Request>();
    try {
      if (int rc = MPI_Iallgather(mine->data(), 4, MPI_UINT64_T, all->data(), 4, MPI_UINT64_T, comm, req.get());
          rc != MPI_SUCCESS)
        mpi_failed(rc, "MPI_Iallgather", what);
      wait(*req, what);
    } catch (...) {
      (void)mine.release();  // still MPI's (see Exchange); the communicator is broken, and the job ends
      (void)all.release();
      (void)req.release();
      if (held_ && std::current_exception() != held_) held_ = nullptr;  // the wait's own failure says it
      throw;
    }
    std::vector<std::uint64_t> seqs(static_cast<std::size_t>(size));
    std::vector<CollectiveSig> sigs(static_cast<std::size_t>(size));
    for (std::size_t r = 0; r < seqs.size(); ++r) {
      seqs[r] = (*all)[4 * r];
      for (int w = 0; w < 3; ++w) sigs[r].w[w] = (*all)[4 * r + 1 + static_cast<std::size_t>(w)];
    }
    if (const std::string desync = mismatch_in(seqs, sigs); !desync.empty()) {
      held_ = nullptr;
      health_.fail(desync + " (seen as the ranks arrived, on rank " + std::to_string(rank) + " of " + peers() + ")",
                   true);
    }
    return nullptr;
  }
  TIDE_INTERNAL_ASSERT(bytes <= kExchangeBytes, "an exchange's payload is larger than its slot");
  if (!exchange_) exchange_ = new Exchange;
  Exchange& x = *exchange_;
  unsigned char* mine = x.slot(rank);
  std::memcpy(mine, header, kHeaderBytes);
  if (bytes) std::memcpy(mine + kHeaderBytes, payload, bytes);
  const int message = static_cast<int>(kHeaderBytes + bytes);
  try {
    // Receives first, so that the sends find them posted. Messages between
    // two ranks on one communicator and tag arrive in order, so exchange k
    // pairs with the peer's exchange k even when the ranks disagree on what
    // collective k is (which this then names). A receive takes a whole
    // slot: a peer that sends a longer message (another collective, or
    // arrive's header alone against a payload) is named, not truncated.
    int n = 0;
    for (int r = 0; r < size; ++r)
      if (r != rank)
        if (int rc = MPI_Irecv(x.slot(r), static_cast<int>(Exchange::kSlot), MPI_BYTE, r, kArrivalTag, comm,
                               &x.reqs[n++]);
            rc != MPI_SUCCESS)
          mpi_failed(rc, "MPI_Irecv", what);
    for (int r = 0; r < size; ++r)
      if (r != rank)
        if (int rc = MPI_Isend(mine, message, MPI_BYTE, r, kArrivalTag, comm, &x.reqs[n++]); rc != MPI_SUCCESS)
          mpi_failed(rc, "MPI_Isend", what);
    wait(x.reqs, n, what, x.statuses);
    bool same = true;
    for (int r = 0, i = 0; r < size; ++r) {
      const unsigned char* m = x.slot(r);
      int got = message;
      if (r != rank) MPI_Get_count(&x.statuses[i++], MPI_BYTE, &got);
      same = same && got == message && std::memcmp(m, mine, kHeaderBytes) == 0;
      x.parts[r] = m + kHeaderBytes;
    }
    if (!same) {
      // Some rank is at another collective (a message of another length is
      // another collective too: the signature holds the byte count).
      std::vector<std::uint64_t> seqs;
      std::vector<CollectiveSig> sigs;
      for (int r = 0; r < size; ++r) {
        std::uint64_t h[4];
        std::memcpy(h, x.slot(r), kHeaderBytes);
        seqs.push_back(h[0]);
        sigs.push_back(CollectiveSig{{h[1], h[2], h[3]}});
      }
      std::string desync = mismatch_in(seqs, sigs);
      if (desync.empty()) desync = "desync at collective #" + std::to_string(what.seq) + ": messages of unequal length";
      held_ = nullptr;
      health_.fail(desync + " (seen as the ranks " + (bytes || !hold ? "exchanged it" : "arrived") + ", on rank " +
                       std::to_string(rank) + " of " + peers() + ")",
                   true);
    }
  } catch (...) {
    exchange_ = nullptr;  // still MPI's (see Exchange); the communicator is broken, and the job ends
    if (held_ && std::current_exception() != held_) held_ = nullptr;  // the wait's own failure says it
    throw;
  }
  return x.parts;
}

}  // namespace tide::detail
