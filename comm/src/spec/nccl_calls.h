// The NCCL call of each collective that has one, as the spec holds it
// (collective_spec.h). Defined in nccl/nccl_calls.cc; a build without NCCL
// defines them as unreachable (nccl/no_nccl.cc). Internal to comm/.
#pragma once

#include "collective_spec.h"

namespace tide::detail {

int nccl_all_reduce(const NcclArgs& a);
int nccl_broadcast(const NcclArgs& a);
int nccl_all_gather(const NcclArgs& a);
int nccl_reduce_scatter(const NcclArgs& a);

}  // namespace tide::detail
