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
// Thread safety: like every op, call from the engine's frontend thread.
#pragma once

#include <memory>
#include <string>

#include <tide/ops/creation.h>

namespace tide {

enum class ReduceOp { sum, avg, max, min };
const char* reduce_op_name(ReduceOp op);

/// A collective failed or timed out (rethrown at a barrier as BackendError,
/// whose message carries this text).
class CommError : public Error {
  using Error::Error;
};

struct CommOptions {
  double timeout_s = 30.0;
  /// Reads TIDE_COMM_TIMEOUT (seconds, > 0); throws tide::ValueError if bad.
  static CommOptions from_env();
};

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
  /// True once a collective has failed; every later one fails at once.
  bool broken() const;

  /// In place: t = op over ranks of t. avg needs a floating dtype.
  void all_reduce_(Tensor& t, ReduceOp op = ReduceOp::sum, Loc loc = Loc::current());
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

  struct Impl;

 private:
  explicit Communicator(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace tide
