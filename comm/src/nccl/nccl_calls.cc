// The NCCL call of each collective's record (spec/collective_spec.cc), with
// NCCL's types restored.
#include "../spec/nccl_calls.h"

#include <cuda_runtime.h>
#include <nccl.h>

namespace tide::detail {

namespace {
ncclDataType_t type_of(const NcclArgs& a) { return static_cast<ncclDataType_t>(a.type); }
ncclRedOp_t op_of(const NcclArgs& a) { return static_cast<ncclRedOp_t>(a.op); }
ncclComm_t comm_of(const NcclArgs& a) { return static_cast<ncclComm_t>(a.comm); }
cudaStream_t stream_of(const NcclArgs& a) { return static_cast<cudaStream_t>(a.stream); }
}  // namespace

int nccl_all_reduce(const NcclArgs& a) {
  return ncclAllReduce(a.in, a.out, a.count, type_of(a), op_of(a), comm_of(a), stream_of(a));
}

int nccl_broadcast(const NcclArgs& a) {
  return ncclBroadcast(a.in, a.out, a.count, type_of(a), a.root, comm_of(a), stream_of(a));
}

int nccl_all_gather(const NcclArgs& a) {
  return ncclAllGather(a.in, a.out, a.count, type_of(a), comm_of(a), stream_of(a));
}

int nccl_reduce_scatter(const NcclArgs& a) {
  return ncclReduceScatter(a.in, a.out, a.count, type_of(a), op_of(a), comm_of(a), stream_of(a));
}

}  // namespace tide::detail
