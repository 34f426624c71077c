// A communicator's NCCL communicators, by set of GPUs. Internal to comm/.
#pragma once

#include <memory>
#include <vector>

namespace tide::detail {

struct NcclComm;  // nccl_collectives.cc: one NCCL communicator, for one GPU

/// Made at the first collective on a set of GPUs: one GPU for a one-tensor
/// collective, the tensors' GPUs in order for the several-device all-reduce.
/// Frontend only (kernels hold their own references).
struct NcclSet {
  std::vector<int> devices;
  std::vector<std::shared_ptr<NcclComm>> comms;  // one per device
};
using NcclSets = std::vector<NcclSet>;

}  // namespace tide::detail
