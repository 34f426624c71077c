// Collectives as engine ops. Each call checks its arguments, pushes one op on
// the comm stream of cpu:0 (one thread makes every MPI call of the rank) and
// returns at once: the op waits for the producers of its inputs by the usual
// dependency tracking, and consumers of its outputs wait for it.
//
// Host tensors use MPI's non-blocking collectives, polled with a deadline
// (TIDE_COMM_TIMEOUT seconds, default 30): a collective that some rank never
// joins fails with an error naming it, instead of hanging. After a failure the
// communicator is broken: later collectives fail at once, and the Runtime
// ends the job with MPI_Abort rather than hang in MPI_Finalize.
//
// Desync check: each communicator chains a hash of the collectives pushed on
// it (kind, count, dtype, reduction, root, devices per rank). check_sync()
// (and Runtime::step()) pushes one small op that compares it across ranks;
// when ranks differ, every rank fails with the first collective where they
// part ways ("desync at collective #12: rank 0 pushed all_reduce (1000 x
// f32, sum), rank 1 pushed broadcast (1000 x f32, root 0)"). Large
// collectives (64 KB and up) also compare what every rank is about to run
// before their blocking MPI call. TIDE_DESYNC_CHECK=0 turns the check off.
//
// A collective whose input comes from a failed op is skipped, like any op
// (its outputs carry the error): fine when every rank skips it, but when
// only some do, the others wait in it. The check also compares which
// collectives each rank skipped, and fails every rank when they differ.
//
// Sub-communicators (split) run their collectives on the same comm thread;
// each has its own sequence numbers and a copy of its parent's timeout. A
// failure in one breaks it and the communicators it was split from (up to
// the world), since the pending MPI call cannot be cancelled.
//
// CUDA tensors (all_reduce, broadcast, all_gather, reduce_scatter, in place
// and out of place) go through NCCL instead, as an op on the comm stream of
// the tensor's GPU: the engine orders it after the inputs' producers on that
// GPU with events, and compute streams keep running while it is in flight.
// Each communicator makes one NCCL communicator per GPU at the first
// collective there (rank 0's ncclUniqueId is broadcast over MPI; the
// frontend waits for this once). Every rank must use the same GPU index for
// a given collective (tide::Runtime::device() gives each rank of a node its
// own). A wait past TIDE_COMM_TIMEOUT aborts the NCCL communicator and fails
// with the collective's name, number, size and peer count. NCCL collectives
// are numbered apart from the host ones, and the desync check compares
// them as a sequence of their own (a check is posted when either grew);
// barrier() orders host collectives only. Without NCCL in the build, a
// CUDA tensor gets tide::DeviceError.
//
// Thread safety: like every op, call from the engine's frontend thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <tide/comm/types.h>
#include <tide/core/loc.h>
#include <tide/core/tensor.h>

namespace tide {

/// When one rank dies, mpirun ends the others with SIGTERM. Once this is
/// installed (the Runtime does it under MPI), each rank then prints to
/// stderr, from the signal handler, the collective it was in ("tide: rank 0:
/// ended by the launcher (SIGTERM) while in all_reduce #3 (..., 3 ranks);
/// vanished: rank 1 (process gone from this host)"), waits half a second so
/// that the others on its host see it alive, and ends as SIGTERM would.
/// Ranks on other hosts cannot be looked at: mpirun's own notice names them.
/// Needs Communicator::mpi_world first; does nothing otherwise.
void install_termination_report();
/// This rank is ending the job itself (MPI_Abort) or finalizing: the report
/// stays quiet.
void ending_job();

/// The flight recorder (the last 256 collectives of this process with their
/// times and states, and what each stream of `engine` runs now and ran last)
/// is written once, to TIDE_FLIGHT_DIR/flight.rank<R>.json (else
/// `trace_dir`, the Runtime's TIDE_TRACE or --tide-trace directory; else
/// nowhere), when a collective fails, when the launcher ends the rank
/// (SIGTERM) or at write_flight_record(). launch/tide-trace flight DIR reads
/// the ranks' files. The Runtime calls this at its start, and with a null
/// engine at its end.
void flight_record_engine(int world_rank, const Engine* engine, const std::string& trace_dir = "");
/// Writes the flight record now, if not written yet (async-signal-safe);
/// the Runtime does when it ends the job.
void write_flight_record(const char* why);

class Communicator {
 public:
  /// A world of one rank that needs no MPI: collectives are local copies.
  static std::shared_ptr<Communicator> local(const CommOptions& o = CommOptions::from_env());
  /// MPI_COMM_WORLD (duplicated). MPI must be initialised with at least
  /// MPI_THREAD_SERIALIZED (tide::Runtime::init does this).
  static std::shared_ptr<Communicator> mpi_world(const CommOptions& o = CommOptions::from_env());
  ~Communicator();

  int rank() const;
  int size() const;
  bool uses_mpi() const;
  /// True once a collective has failed here or in any communicator related
  /// to this one by split; every later one fails at once.
  bool broken() const;
  /// Why it is broken (the first failure, or a desync that explains it);
  /// empty while it is not.
  std::string failure() const;
  /// Whether this build runs collectives on CUDA tensors (NCCL was found).
  static bool nccl_built();

  /// In place: t = op over ranks of t. avg needs a floating dtype.
  void all_reduce_(Tensor& t, ReduceOp op = ReduceOp::sum, Loc loc = Loc::current());
  /// In place, over the devices of this rank and then over ranks: every
  /// tensor of `per_device` ends up holding op over all tensors of all ranks.
  /// The tensors must be on distinct devices of the engine, with one shape
  /// and dtype (else ShapeError, DTypeError or DeviceError; an empty list is
  /// a ValueError; all thrown before anything is queued). Every rank must
  /// pass the same number of tensors (not checked): avg divides by
  /// per_device.size() x size(). One tensor is the same as all_reduce_(t).
  /// Host tensors: runs on cpu:0's comm stream as a local reduction into a buffer, the
  /// cross-rank all-reduce of that buffer, and a copy back to every tensor,
  /// so it waits for each tensor's producers on its own device's streams,
  /// and later readers and writers on those streams wait for it.
  /// CUDA tensors (all of them, on distinct GPUs; NCCL): one NCCL
  /// communicator over every rank's GPUs (member rank x k + i holds tensor
  /// i), made at the first call for these GPUs, then one op per GPU on its
  /// comm stream. Every GPU must be a member only once in the whole job;
  /// the same GPUs in another order use the same NCCL communicator. The
  /// naive engine refuses more than one GPU (tide::UsageError): it would
  /// drive their NCCL calls one after the other from one thread.
  void all_reduce_(std::vector<Tensor>& per_device, ReduceOp op = ReduceOp::sum, Loc loc = Loc::current());
  /// Out of place: a new tensor.
  Tensor all_reduce(const Tensor& t, ReduceOp op = ReduceOp::sum, Loc loc = Loc::current());
  /// In place: every rank gets root's values.
  void broadcast_(Tensor& t, int root = 0, Loc loc = Loc::current());
  Tensor broadcast(const Tensor& t, int root = 0, Loc loc = Loc::current());
  /// Shape [size, ...t.shape]: row r holds rank r's t.
  Tensor all_gather(const Tensor& t, Loc loc = Loc::current());
  /// t's first axis is split in size() blocks; rank r gets block r reduced
  /// over ranks, shape [t.shape[0] / size, ...].
  Tensor reduce_scatter(const Tensor& t, ReduceOp op = ReduceOp::sum, Loc loc = Loc::current());
  /// Blocks until every rank has reached it (after this rank's queued
  /// collectives); a counted blocker.
  void barrier(Loc loc = Loc::current());

  /// Measures this rank's clock against rank 0's (ClockSample): rank 0
  /// answers `pings` ping-pong messages from each other rank in turn, and
  /// each keeps the one with the shortest round trip. Every rank must call
  /// it, like any collective; it runs on the comm stream after this rank's
  /// queued collectives and blocks until done (a counted blocker). `pings`
  /// from 1 to 1000, else ValueError. Trace files carry one sample from the
  /// start of a run and one from its end, so that a merge can put every
  /// rank on rank 0's clock (launch/tide-trace).
  ClockSample clock_offset(int pings = 16, Loc loc = Loc::current());

  /// Like MPI_Comm_split: the ranks that pass the same `color` (>= 0, else
  /// ValueError) form a group, ordered by `key`, then by rank here. Every
  /// rank of this communicator must call it, in the same order relative to
  /// its other collectives. Runs on the comm stream after this rank's queued
  /// collectives and blocks until the group exists (a counted blocker). The
  /// group's collectives also run on cpu:0's comm stream; dropping the last
  /// handle frees it there, after them. A local communicator returns a new
  /// local one (a group of one rank).
  std::shared_ptr<Communicator> split(int color, int key = 0, Loc loc = Loc::current());

  /// Desync check: compares the collectives pushed on this communicator so
  /// far across ranks. Pushes one op on the comm stream and returns at once
  /// (not a blocker): the op starts a small all-gather of (count, hash) on a
  /// communicator of its own, and a later check or collective finishes it.
  /// If the ranks differ, every rank fails the collective then waiting (or
  /// the next check) with a message naming the first differing collective;
  /// the communicator breaks, and the error surfaces at the next barrier as
  /// a BackendError. A collective that hangs because ranks diverged is
  /// named this way instead of by the timeout, provided every rank reaches
  /// its next check. Does nothing when no collective was pushed here since
  /// the last check, so the checks of the ranks pair up in the order of
  /// those that follow new collectives, and must cover the same ones (ranks
  /// may call it unequally only between collective-free stretches).
  /// Runtime::step() calls it on the world. Does nothing with one rank,
  /// without MPI, or with TIDE_DESYNC_CHECK=0.
  void check_sync(Loc loc = Loc::current());
  /// Pushes an op that waits (up to the timeout) for every check posted so
  /// far to finish, so none is left in flight; the Runtime calls it before
  /// MPI_Finalize. Does nothing when checks are off.
  void finish_checks(Loc loc = Loc::current());
  /// Whether check_sync() does anything here.
  bool desync_check() const;

  /// Ends this communicator's life as the destructor would, but leaves the
  /// object in place: every later call throws tide::UsageError. The
  /// Runtime does this to its world when it ends, so that a
  /// `Communicator&` kept from Runtime::world() fails clearly instead of
  /// pointing at freed memory.
  void retire();

  struct Impl;

 private:
  explicit Communicator(std::shared_ptr<Impl> impl);
  /// impl_, or tide::UsageError naming `name` once retired.
  const std::shared_ptr<Impl>& live(const char* name) const;
  void release();
  std::shared_ptr<Impl> impl_;
};

}  // namespace tide
