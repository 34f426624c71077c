// The state behind a Communicator handle, shared by the frontend (which
// pushes collectives) and the kernels of those collectives (which run on
// cpu:0's comm thread and make every MPI call of the rank). Internal to
// comm/. It is made of one object per concern:
//   health/  FailureState  broken or not, and why
//   mpi/     MpiGroup      the ranks over MPI; runs and times host collectives
//   check/   SyncChecker   the desync check and its signature history
//   nccl/    NcclSets      the NCCL communicators, by set of GPUs
// and numbers the collectives pushed on it (begin), each described by its
// kind's record (spec/collective_spec.h).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include <tide/comm/communicator.h>
#include <tide/core/engine.h>

#include "health/desync.h"
#include "health/failure.h"
#include "health/flight_recorder.h"
#include "check/sync_check.h"
#include "mpi/mpi_group.h"
#include "nccl/nccl_sets.h"
#include "spec/collective_spec.h"

namespace tide {

struct Communicator::Impl {
  /// `parent`: the communicator this one is split from (null for a world).
  explicit Impl(const CommOptions& o, std::shared_ptr<Impl> parent_impl = nullptr);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  const CommOptions options;
  /// The communicator this one was split from (null for a world): a failure
  /// here breaks it too, so the Runtime sees it and aborts.
  const std::shared_ptr<Impl> parent;
  detail::FailureState health;
  detail::MpiGroup mpi;
  detail::SyncChecker checks;
  detail::NcclSets nccl;
  /// Whether ~Impl frees `mpi.comm`. A group's is freed by an op on the
  /// comm thread instead (see ~Communicator), since the frontend must not
  /// call MPI while that thread may.
  bool free_in_destructor = true;
  std::uint64_t next_seq = 0;  // frontend only
  /// Collectives on CUDA tensors (NCCL) are numbered apart: they run on the
  /// GPUs' comm streams, not on the comm thread, and are not in the desync
  /// check's host sequence. Frontend only.
  std::uint64_t next_device_seq = 0;

  std::string peers() const { return mpi.peers(); }
  bool is_broken() const { return health.is_broken(); }
  std::string failure() { return health.failure(); }
  void check_usable() { health.check_usable(); }
  [[noreturn]] void fail(const std::string& what, bool diagnosis = false) { health.fail(what, diagnosis); }

  /// Frontend, at every host collective's push: its id, with the next
  /// sequence number; its signature goes to the desync check.
  detail::CollectiveId begin(detail::CollectiveKind kind, std::int64_t count = -1, DType dtype = DType::f32,
                             std::optional<ReduceOp> op = std::nullopt, int root = -1, int devices = 0) {
    // MPI counts are ints: refused here, before anything is numbered or
    // pushed. MPI is given the spec's call count (a block per rank for
    // reduce_scatter).
    const detail::CollectiveSpec& spec = detail::collective_spec(kind);
    const std::int64_t mpi_count = spec.call_count && mpi.size > 0 ? spec.call_count(count, mpi.size) : count;
    if (mpi.active && mpi_count > std::numeric_limits<int>::max())
      throw ValueError(std::string(spec.name) + ": " + std::to_string(mpi_count) + " x " + dtype_name(dtype) +
                       (mpi_count == count ? "" : " per rank") + " is more than MPI's largest count (" +
                       std::to_string(std::numeric_limits<int>::max()) + " elements per rank); split the tensor");
    detail::CollectiveId id;
    id.kind = kind;
    id.seq = next_seq++;
    id.count = count;
    id.dtype = dtype;
    id.op = op;
    id.root = root;
    id.devices = devices;
    checks.note_host(id);
    id.flight = detail::flight_pushed(mpi.ident, id);
    return id;
  }
  /// At the start of every collective's kernel (comm thread): the rank is
  /// in it now, and the ones between the last that ran and it were skipped.
  void running(const detail::CollectiveId& what) {
    mpi.enter(what);
    checks.note_running(what.seq);
    detail::flight_started(what.flight);
  }
  /// The group's members are known (a world at creation, a group in its
  /// split): failures are announced, and the desync check set up.
  void ready();
};

}  // namespace tide
