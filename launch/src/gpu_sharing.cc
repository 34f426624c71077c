#include <tide/launch/gpu_sharing.h>

#include <algorithm>
#include <map>

#include <tide/core/error.h>

namespace tide {

std::string GpuSharing::nccl_host_id(const std::string& base) const {
  return base + ":tide-slot" + std::to_string(slot);
}

GpuSharing GpuSharing::of(const std::vector<std::string>& uuids, int local_rank) {
  if (local_rank < 0 || local_rank >= static_cast<int>(uuids.size()))
    throw ValueError("GpuSharing: local rank " + std::to_string(local_rank) + " of " +
                     std::to_string(uuids.size()) + " ranks");
  GpuSharing s;
  std::map<std::string, int> per_gpu;
  const std::string& mine = uuids[static_cast<std::size_t>(local_rank)];
  for (int r = 0; r < static_cast<int>(uuids.size()); ++r) {
    const std::string& u = uuids[static_cast<std::size_t>(r)];
    if (u.empty()) continue;
    const int before = per_gpu[u]++;
    if (r == local_rank) s.slot = before;
    s.slots = std::max(s.slots, per_gpu[u]);
  }
  if (!mine.empty()) s.ranks_on_my_gpu = per_gpu[mine];
  return s;
}

}  // namespace tide
