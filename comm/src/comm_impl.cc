#include "comm_impl.h"

#include "nccl/device_collectives.h"

namespace tide {

Communicator::Impl::Impl(const CommOptions& o, std::shared_ptr<Impl> parent_impl)
    : options(o),
      parent(std::move(parent_impl)),
      health(parent ? &parent->health : nullptr),
      mpi(health, options.timeout_s, parent != nullptr),
      checks(mpi, health, options, parent ? &parent->checks : nullptr) {
  mpi.on_poll = [this] { checks.poll_all(); };
  mpi.checks_busy = [this] { return checks.busy_any(); };
}

Communicator::Impl::~Impl() {
  detail::release_device_comms_now(*this);
  if (!mpi.active) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (free_in_destructor) checks.free_comms_at_exit();
  if (!free_in_destructor || mpi.comm == MPI_COMM_NULL || is_broken()) return;
  MPI_Comm_free(&mpi.comm);
}

void Communicator::Impl::ready() {
  if (mpi.spans_ranks()) health.announce_as(mpi.world_rank);
  checks.enable();
}

}  // namespace tide
