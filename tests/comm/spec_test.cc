// The collectives' records (comm/src/spec): one per kind, in the kinds'
// order, and the shape and count rules the frontend, MPI and NCCL share.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "spec/collective_spec.h"

namespace tide {
namespace {

using detail::CollectiveKind;
using detail::collective_spec;

constexpr CollectiveKind kAll[] = {CollectiveKind::all_reduce, CollectiveKind::broadcast, CollectiveKind::all_gather,
                                   CollectiveKind::reduce_scatter, CollectiveKind::barrier, CollectiveKind::split,
                                   CollectiveKind::nccl_init, CollectiveKind::clock};
constexpr CollectiveKind kWithTensors[] = {CollectiveKind::all_reduce, CollectiveKind::broadcast,
                                           CollectiveKind::all_gather, CollectiveKind::reduce_scatter};

TEST(CollectiveSpec, EachKindHasItsOwnRecordAndName) {
  std::set<std::string> names;
  for (CollectiveKind k : kAll) {
    const auto& s = collective_spec(k);
    EXPECT_EQ(s.kind, k);
    ASSERT_NE(s.name, nullptr);
    EXPECT_TRUE(names.insert(s.name).second) << s.name << " names two kinds";
  }
  EXPECT_STREQ(detail::collective_kind_name(CollectiveKind::clock), "clock_offset");
}

TEST(CollectiveSpec, EveryCollectiveWithTensorsHasItsShapeCountMpiAndNcclCalls) {
  for (CollectiveKind k : kWithTensors) {
    const auto& s = collective_spec(k);
    SCOPED_TRACE(s.name);
    EXPECT_NE(s.result_shape, nullptr);
    EXPECT_NE(s.call_count, nullptr);
    EXPECT_NE(s.mpi_start, nullptr);
    EXPECT_NE(s.mpi_blocking, nullptr);
    EXPECT_NE(s.nccl, nullptr);
    ASSERT_NE(s.nccl_name, nullptr);
    EXPECT_EQ(std::string(s.nccl_name).rfind("nccl", 0), 0u);
  }
  for (CollectiveKind k : {CollectiveKind::barrier, CollectiveKind::split, CollectiveKind::nccl_init,
                           CollectiveKind::clock}) {
    EXPECT_EQ(collective_spec(k).result_shape, nullptr) << collective_spec(k).name;
    EXPECT_EQ(collective_spec(k).nccl, nullptr) << collective_spec(k).name;
  }
}

TEST(CollectiveSpec, WhatReducesAndWhatHasARoot) {
  EXPECT_TRUE(collective_spec(CollectiveKind::all_reduce).reduces);
  EXPECT_TRUE(collective_spec(CollectiveKind::reduce_scatter).reduces);
  EXPECT_FALSE(collective_spec(CollectiveKind::all_gather).reduces);
  EXPECT_FALSE(collective_spec(CollectiveKind::broadcast).reduces);
  EXPECT_TRUE(collective_spec(CollectiveKind::broadcast).rooted);
  EXPECT_FALSE(collective_spec(CollectiveKind::all_reduce).rooted);
  EXPECT_TRUE(collective_spec(CollectiveKind::broadcast).mpi_in_place_only);
  EXPECT_FALSE(collective_spec(CollectiveKind::all_reduce).mpi_in_place_only);
}

TEST(CollectiveSpec, ResultShapes) {
  const Shape in{6, 2};
  EXPECT_EQ(*collective_spec(CollectiveKind::all_reduce).result_shape(in, 3), in);
  EXPECT_EQ(*collective_spec(CollectiveKind::broadcast).result_shape(in, 3), in);
  EXPECT_EQ(*collective_spec(CollectiveKind::all_gather).result_shape(in, 3), (Shape{3, 6, 2}));
  EXPECT_EQ(*collective_spec(CollectiveKind::all_gather).result_shape(Shape{}, 4), (Shape{4}));
  const auto& rs = collective_spec(CollectiveKind::reduce_scatter);
  EXPECT_EQ(*rs.result_shape(in, 3), (Shape{2, 2}));
  EXPECT_EQ(*rs.result_shape(in, 1), in);
  EXPECT_FALSE(rs.result_shape(in, 4).has_value());
  EXPECT_FALSE(rs.result_shape(Shape{}, 2).has_value());
  ASSERT_NE(rs.shape_error, nullptr);
  EXPECT_EQ(rs.shape_error(in, "a group of 4 ranks"),
            "the first axis of [6, 2] must split evenly over a group of 4 ranks");
}

TEST(CollectiveSpec, CallCountsArePerRankBlocksForReduceScatterOnly) {
  EXPECT_EQ(collective_spec(CollectiveKind::reduce_scatter).call_count(12, 3), 4);
  EXPECT_EQ(collective_spec(CollectiveKind::all_reduce).call_count(12, 3), 12);
  EXPECT_EQ(collective_spec(CollectiveKind::all_gather).call_count(12, 3), 12);
  EXPECT_EQ(collective_spec(CollectiveKind::broadcast).call_count(12, 3), 12);
}

}  // namespace
}  // namespace tide
