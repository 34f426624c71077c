// Values for collective tests in the style of MPI test suites: rank r
// contributes values derived from r, so every expected result is exact. Used
// by the host (MPI) and the GPU (NCCL) collective tests alike.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "mpi_test.h"

namespace tide::test {

// Rank r's element j: (r + 1) * (j % 7 + 1), exact in every dtype.
template <typename T>
std::vector<T> contribution(int rank, std::int64_t n) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::int64_t j = 0; j < n; ++j) v[static_cast<std::size_t>(j)] = static_cast<T>((rank + 1) * (j % 7 + 1));
  return v;
}

/// Element j of op over `size` ranks' contributions.
template <typename T>
T expected_reduce(ReduceOp op, int size, std::int64_t j) {
  const double unit = static_cast<double>(j % 7 + 1);
  const double sum_ranks = size * (size + 1) / 2.0;  // sum of (r + 1)
  switch (op) {
    case ReduceOp::sum: return static_cast<T>(sum_ranks * unit);
    case ReduceOp::avg: return static_cast<T>(sum_ranks / size * unit);
    case ReduceOp::max: return static_cast<T>(size * unit);
    case ReduceOp::min: return static_cast<T>(unit);
  }
  return T{};
}

/// A host vector as a tensor on `device`.
template <typename T>
Tensor tensor_on(const std::vector<T>& v, Device device) {
  Tensor host = from_vector(v);
  return device.is_cpu() ? host : copy_to(host, device);
}

/// all_reduce_ and all_reduce of every count on `device`: exact results,
/// outputs on the device, inputs of the out-of-place call left alone.
template <typename T>
void check_all_reduce(ReduceOp op, Device device, std::span<const std::int64_t> counts) {
  const int r = world().rank(), p = world().size();
  for (std::int64_t n : counts) {
    for (bool in_place : {true, false}) {
      Tensor t = tensor_on(contribution<T>(r, n), device);
      Tensor out = t;
      if (in_place) {
        world().all_reduce_(out, op);
      } else {
        out = world().all_reduce(t, op);
      }
      EXPECT_EQ(out.device(), device);
      std::vector<T> got = out.to_vector<T>();
      std::int64_t wrong = 0;
      for (std::int64_t j = 0; j < n; ++j)
        if (got[static_cast<std::size_t>(j)] != expected_reduce<T>(op, p, j)) ++wrong;
      EXPECT_EQ(wrong, 0) << reduce_op_name(op) << " n=" << n << (in_place ? " in place" : " out of place");
      if (!in_place) {
        EXPECT_EQ(t.to_vector<T>(), contribution<T>(r, n)) << "the input must be left alone";
      }
    }
  }
}

}  // namespace tide::test
