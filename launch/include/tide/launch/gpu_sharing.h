#pragma once

#include <string>
#include <vector>

namespace tide {

/// How the ranks of one node share its GPUs, worked out from the GPU (by
/// UUID) each rank would use, in node-local rank order ("" for a rank that
/// has none). NCCL refuses two ranks of one communicator on one GPU of one
/// host, but takes ranks with different NCCL_HOSTID values for different
/// hosts and joins them over its network transport. So the ranks of a node
/// are dealt into "slots": the k-th rank on each GPU is in slot k, every
/// rank of slot k gets the NCCL host identity `<base>:tide-slot<k>`, and
/// no slot holds two ranks of one GPU. Ranks of one slot stay one host to
/// NCCL (shared memory, NVLink between their GPUs); ranks of different
/// slots talk through sockets (or InfiniBand).
struct GpuSharing {
  /// Ranks on this rank's GPU, itself included (1: it has the GPU alone;
  /// 0: it has no GPU).
  int ranks_on_my_gpu = 0;
  /// This rank's index among the ranks on its GPU, in local-rank order.
  int slot = 0;
  /// The most ranks on any one GPU of the node (1 or 0: nobody shares).
  int slots = 0;

  /// Whether this rank shares its GPU with another rank of the node.
  bool shared() const { return ranks_on_my_gpu > 1; }
  /// Whether any two ranks of the node share a GPU: then every rank of the
  /// node needs its slot's NCCL host identity.
  bool node_shares() const { return slots > 1; }
  /// The NCCL host identity of this rank's slot, from `base` (the host's
  /// name, or the NCCL_HOSTID the job was given).
  std::string nccl_host_id(const std::string& base) const;

  /// Throws tide::ValueError for a local_rank outside `uuids`.
  static GpuSharing of(const std::vector<std::string>& uuids, int local_rank);
};

}  // namespace tide
