// The deadline of a blocking MPI call. Internal to comm/.
//
// Large host collectives call MPI's blocking form once every rank has
// arrived (Open MPI's non-blocking collectives reach well under half the
// bandwidth of its tuned blocking ones). A thread inside a blocking MPI call
// cannot be woken: when a peer freezes (SIGSTOP, a debugger, swapped out) or
// its link is cut mid-transfer, the call never returns. So a watchdog thread
// holds the deadline instead of the caller: past it, the watchdog prints why
// and ends the job with MPI_Abort, as a failed collective does. The comm
// thread pays a lock and, rarely, a notify per blocking call.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace tide::detail {

/// Arms the process's watchdog for one blocking MPI call (comm thread, one
/// at a time). If the guard is still alive at `deadline`, the watchdog
/// thread calls `describe` (which must not call MPI: the comm thread is
/// inside it), prints "tide: rank R: <why>" and "ending the job (MPI_Abort)"
/// (the line tiderun's --abort-timeout watches for) and calls MPI_Abort.
class BlockingDeadline {
 public:
  using clock = std::chrono::steady_clock;
  BlockingDeadline(int world_rank, clock::time_point deadline, std::function<std::string()> describe);
  ~BlockingDeadline();
  BlockingDeadline(const BlockingDeadline&) = delete;
  BlockingDeadline& operator=(const BlockingDeadline&) = delete;
};

}  // namespace tide::detail
