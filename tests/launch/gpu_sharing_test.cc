// Which rank of a node gets which NCCL host identity when ranks share GPUs
// (GpuSharing): no two ranks of one GPU ever get the same identity, and ranks
// of different GPUs keep one where they can.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <tide/core/error.h>
#include <tide/launch/gpu_sharing.h>

namespace tide {
namespace {

std::vector<GpuSharing> all_of(const std::vector<std::string>& uuids) {
  std::vector<GpuSharing> out;
  for (int r = 0; r < static_cast<int>(uuids.size()); ++r) out.push_back(GpuSharing::of(uuids, r));
  return out;
}

TEST(GpuSharing, OneRankPerGpuSharesNothing) {
  for (const GpuSharing& s : all_of({"a", "b", "c", "d"})) {
    EXPECT_FALSE(s.shared());
    EXPECT_FALSE(s.node_shares());
    EXPECT_EQ(s.ranks_on_my_gpu, 1);
    EXPECT_EQ(s.slot, 0);
  }
}

TEST(GpuSharing, TwoRanksOnOneGpuGetTwoHostIdentities) {
  const auto s = all_of({"a", "a"});
  ASSERT_EQ(s.size(), 2u);
  for (const GpuSharing& x : s) {
    EXPECT_TRUE(x.shared());
    EXPECT_TRUE(x.node_shares());
    EXPECT_EQ(x.ranks_on_my_gpu, 2);
    EXPECT_EQ(x.slots, 2);
  }
  EXPECT_EQ(s[0].slot, 0);
  EXPECT_EQ(s[1].slot, 1);
  EXPECT_EQ(s[0].nccl_host_id("node7"), "node7:tide-slot0");
  EXPECT_EQ(s[1].nccl_host_id("node7"), "node7:tide-slot1");
}

// Ranks dealt round-robin over GPUs (local rank % GPUs), as the Runtime
// does: 5 ranks on 2 GPUs. Each identity holds at most one rank per GPU,
// and ranks that do not share (rank 4 would, rank 1 and 3 share GPU b) still
// need their slot's identity, since the node shares.
TEST(GpuSharing, NoIdentityHoldsTwoRanksOfOneGpu) {
  const std::vector<std::string> uuids = {"a", "b", "a", "b", "a"};
  const auto s = all_of(uuids);
  std::map<std::string, std::set<std::string>> gpus_per_identity;
  for (int r = 0; r < 5; ++r) {
    EXPECT_TRUE(s[r].node_shares());
    EXPECT_EQ(s[r].slots, 3);
    const std::string id = s[r].nccl_host_id("h");
    EXPECT_TRUE(gpus_per_identity[id].insert(uuids[r]).second) << "rank " << r << " repeats a GPU in " << id;
  }
  EXPECT_EQ(s[0].ranks_on_my_gpu, 3);
  EXPECT_EQ(s[1].ranks_on_my_gpu, 2);
  EXPECT_EQ(s[4].slot, 2);
  // Slot 0 keeps ranks 0 and 1 one host to NCCL (shared memory, NVLink).
  EXPECT_EQ(s[0].nccl_host_id("h"), s[1].nccl_host_id("h"));
  EXPECT_EQ(gpus_per_identity.size(), 3u);
}

TEST(GpuSharing, RanksWithoutAGpuAreLeftOut) {
  const auto s = all_of({"", "", "a"});
  EXPECT_EQ(s[0].ranks_on_my_gpu, 0);
  EXPECT_FALSE(s[0].shared());
  EXPECT_FALSE(s[0].node_shares());
  EXPECT_EQ(s[2].ranks_on_my_gpu, 1);
  EXPECT_FALSE(s[2].node_shares());
}

TEST(GpuSharing, ARankOutsideTheNodeIsRefused) {
  EXPECT_THROW(GpuSharing::of({"a"}, 1), ValueError);
  EXPECT_THROW(GpuSharing::of({}, 0), ValueError);
  EXPECT_THROW(GpuSharing::of({"a"}, -1), ValueError);
}

}  // namespace
}  // namespace tide
