// Communicator::clock_offset: each rank's steady clock against rank 0's, by
// ping-pong messages on the comm thread (Cristian's method: the reply's
// timestamp is taken to fall at the midpoint of the round trip, which puts
// the error within half the round trip).
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include <tide/comm/communicator.h>
#include <tide/core/engine.h>

#include "host_collective.h"

namespace tide {

namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr int kClockTag = 78;  // apart from the arrival messages' (MpiGroup::kArrivalTag)

using detail::CollectiveId;
using detail::MpiGroup;

/// Waits for `reqs` spinning on MPI_Testall for up to kSpin_ns (a round
/// trip measured through the poll loop's pauses would widen the error
/// bound), then as any collective waits (deadline, roll calls).
void wait_prompt(MpiGroup& mpi, MPI_Request* reqs, int n, const CollectiveId& what) {
  constexpr std::int64_t kSpin_ns = 2'000'000;
  const std::int64_t until = steady_ns() + kSpin_ns;
  do {
    int done = 0;
    if (int rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE); rc != MPI_SUCCESS)
      mpi.mpi_failed(rc, "MPI_Testall", what);
    if (done) return;
  } while (steady_ns() < until);
  mpi.wait(reqs, n, what);
}

/// The messages' buffers, on the heap: when a wait fails its requests stay
/// pending (they cannot be cancelled), and MPI may still write here later.
/// Leaked then, never freed under it.
struct Buffers {
  std::int64_t in = 0, out = 0;
};

/// Rank 0: answers `pings` pings from each other rank in turn with its clock.
void answer_pings(MpiGroup& mpi, int pings, const CollectiveId& what, Buffers& b) {
  for (int peer = 1; peer < mpi.size; ++peer) {
    for (int k = 0; k < pings; ++k) {
      MPI_Request req;
      if (int rc = MPI_Irecv(&b.in, 1, MPI_INT64_T, peer, kClockTag, mpi.comm, &req); rc != MPI_SUCCESS)
        mpi.mpi_failed(rc, "MPI_Irecv", what);
      wait_prompt(mpi, &req, 1, what);
      b.out = steady_ns();
      if (int rc = MPI_Isend(&b.out, 1, MPI_INT64_T, peer, kClockTag, mpi.comm, &req); rc != MPI_SUCCESS)
        mpi.mpi_failed(rc, "MPI_Isend", what);
      wait_prompt(mpi, &req, 1, what);
    }
  }
}

/// Another rank: pings rank 0 `pings` times and keeps the shortest round trip.
ClockSample ping_rank0(MpiGroup& mpi, int pings, const CollectiveId& what, Buffers& b) {
  ClockSample best;
  std::int64_t best_rtt = std::numeric_limits<std::int64_t>::max();
  for (int k = 0; k < pings; ++k) {
    MPI_Request reqs[2];
    if (int rc = MPI_Irecv(&b.in, 1, MPI_INT64_T, 0, kClockTag, mpi.comm, &reqs[0]); rc != MPI_SUCCESS)
      mpi.mpi_failed(rc, "MPI_Irecv", what);
    b.out = steady_ns();
    const std::int64_t sent = b.out;
    if (int rc = MPI_Isend(&b.out, 1, MPI_INT64_T, 0, kClockTag, mpi.comm, &reqs[1]); rc != MPI_SUCCESS)
      mpi.mpi_failed(rc, "MPI_Isend", what);
    wait_prompt(mpi, reqs, 2, what);
    const std::int64_t back = steady_ns();
    if (back - sent < best_rtt) {
      best_rtt = back - sent;
      best.local_ns = sent + best_rtt / 2;
      best.offset_ns = b.in - best.local_ns;
      best.error_ns = (best_rtt + 1) / 2;
    }
  }
  return best;
}

}  // namespace

ClockSample Communicator::clock_offset(int pings, Loc loc) {
  const auto& impl = live("clock_offset");
  if (pings < 1 || pings > 1000)
    throw ValueError("clock_offset: pings must be from 1 to 1000, got " + std::to_string(pings));
  Engine& e = current_engine();
  auto token = e.allocate(cpu(0), 1);
  auto out = std::make_shared<ClockSample>();
  detail::push_host_collective(impl, e, "clock_offset", impl->begin(detail::CollectiveKind::clock), {}, {token}, loc,
                               [out, pings](const OpContext&, MpiGroup& mpi, const CollectiveId& what) {
                                 out->local_ns = steady_ns();
                                 if (!mpi.spans_ranks()) return;
                                 auto buffers = std::make_unique<Buffers>();
                                 try {
                                   if (mpi.rank == 0)
                                     answer_pings(mpi, pings, what, *buffers);
                                   else
                                     *out = ping_rank0(mpi, pings, what, *buffers);
                                 } catch (...) {
                                   (void)buffers.release();  // MPI may still write there
                                   throw;
                                 }
                                 detail::liveness_leave();
                               });
  e.wait_for(*token, "clock_offset", loc);
  return *out;
}

}  // namespace tide
