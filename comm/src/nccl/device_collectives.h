// Collectives on CUDA tensors: NCCL on the tensor's GPU, run by that GPU's
// comm stream. Internal to comm/; collectives.cc checks the arguments and
// calls in here. Without NCCL in the build (no CUDA, or no libnccl found)
// every entry point throws tide::DeviceError before anything is queued.
#pragma once

#include <memory>

#include "../comm_impl.h"

namespace tide::detail {

/// Frontend: pushes collective `what` (its seq from Impl::next_device_seq)
/// as an op on the comm stream of `in`'s GPU, reading `in` and writing
/// `out` (the same tensor for an in-place call). `out` is
/// on the same GPU and sized for the collective (checked by the caller).
/// At the first collective on that GPU, first makes the communicator's NCCL
/// communicator for it: rank 0's ncclUniqueId goes to every rank over MPI
/// on the comm thread (timed like any host collective), then
/// ncclCommInitRankConfig (non-blocking, polled against the timeout). The
/// frontend waits for that once (a counted blocker); a failure throws
/// BackendError there and breaks the communicator.
void push_device_collective(const std::shared_ptr<Communicator::Impl>& impl, const CollectiveId& what,
                            const Tensor& in, const Tensor& out, Loc loc);

/// Frontend: the several-device all-reduce of CUDA tensors, one per GPU
/// of this rank (distinct, checked by the caller): one NCCL communicator of
/// size() x k members made for these GPUs at first use (in one NCCL group),
/// then one op per GPU on its comm stream; avg divides by size() x k.
void push_device_all_reduce(const std::shared_ptr<Communicator::Impl>& impl, const CollectiveId& what,
                            std::vector<Tensor>& per_device, Loc loc);

/// Whether this build can run collectives on CUDA tensors.
bool nccl_built();

/// Frontend, when a communicator handle is dropped with its engine alive:
/// pushes one op per GPU with an NCCL communicator, on that GPU's comm
/// stream after its collectives, that finalizes and destroys it. Every rank
/// drops the handle at the same point of its program, so the finalize (a
/// collective over the members) pairs up; left to the last reference
/// instead, it would run whenever each rank's engine recycles the ops.
void release_device_comms(const std::shared_ptr<Communicator::Impl>& impl, Engine& e);

/// ~Impl, on whatever thread drops the communicator last (the Runtime's,
/// after the engine is gone): finalizes every NCCL communicator not yet
/// released, each set's members in one NCCL group (as NCCL asks of one
/// thread that manages several), then destroys them (aborts past the
/// timeout).
void release_device_comms_now(Communicator::Impl& impl) noexcept;

}  // namespace tide::detail
