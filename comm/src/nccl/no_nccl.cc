// A build without NCCL (no CUDA, or no libnccl found at configure time):
// collectives on CUDA tensors are refused before anything is queued.
#include <tide/core/assert.h>

#include "../spec/nccl_calls.h"
#include "device_collectives.h"

namespace tide::detail {

bool nccl_built() { return false; }

void push_device_all_reduce(const std::shared_ptr<Communicator::Impl>&, const CollectiveId& what,
                            std::vector<Tensor>& per_device, Loc loc) {
  push_device_collective(nullptr, what, per_device.at(0), per_device.at(0), loc);
}

void release_device_comms(const std::shared_ptr<Communicator::Impl>&, Engine&) {}

void release_device_comms_now(Communicator::Impl&) noexcept {}

void push_device_collective(const std::shared_ptr<Communicator::Impl>&, const CollectiveId& what, const Tensor& in,
                            const Tensor&, Loc) {
  throw DeviceError(std::string(collective_kind_name(what.kind)) + ": a tensor on " + in.device().str() +
                    " needs NCCL, and this build of tide has none (built without CUDA, or libnccl was not found)");
}

// The spec's NCCL calls: never made without NCCL (the frontend refuses
// CUDA tensors first).
int nccl_all_reduce(const NcclArgs&) { TIDE_UNREACHABLE("an NCCL call in a build without NCCL"); }
int nccl_broadcast(const NcclArgs&) { TIDE_UNREACHABLE("an NCCL call in a build without NCCL"); }
int nccl_all_gather(const NcclArgs&) { TIDE_UNREACHABLE("an NCCL call in a build without NCCL"); }
int nccl_reduce_scatter(const NcclArgs&) { TIDE_UNREACHABLE("an NCCL call in a build without NCCL"); }

}  // namespace tide::detail
