// How every host collective is pushed. Internal to comm/.
#pragma once

#include <memory>
#include <utility>

#include "comm_impl.h"
#include "push_comm.h"

namespace tide::detail {

/// Pushes collective `what` (numbered by Impl::begin) as an op on the comm
/// thread reading `reads` and writing `writes`. Its kernel first marks the
/// collective running (liveness, the desync check's record of what ran) and
/// refuses a broken communicator, then calls `kernel(c, impl->mpi, what)`, which
/// makes the MPI call (MpiGroup::collective or wait) when the group spans
/// several ranks, or does the local equivalent when it does not.
template <typename Kernel>
void push_host_collective(const std::shared_ptr<Communicator::Impl>& impl, Engine& e, const char* name,
                          const CollectiveId& what, StorageList reads, StorageList writes, Loc loc,
                          Kernel kernel) {
  push_comm(e, name, std::move(reads), std::move(writes), loc,
            [impl, what, kernel = std::move(kernel)](const OpContext& c) {
              impl->running(what);
              try {
                impl->check_usable();
                kernel(c, impl->mpi, what);
              } catch (...) {
                flight_ended(what.flight, true);
                throw;
              }
              flight_ended(what.flight, false);
            });
}

}  // namespace tide::detail
