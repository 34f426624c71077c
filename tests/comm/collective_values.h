// Values for collective tests in the style of MPI test suites: rank r
// contributes values derived from r, so every expected result is exact. Used
// by the host (MPI) and the GPU (NCCL) collective tests alike.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
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

/// Whether `got` is element j of op over `size` ranks: exact, except NCCL's
/// floating-point average over a rank count that is not a power of two,
/// which scales each contribution by 1/size (inexact) before summing, and
/// so may land a few units in the last place off.
template <typename T>
bool reduced_as_expected(T got, ReduceOp op, int size, std::int64_t j, Device device) {
  const T want = expected_reduce<T>(op, size, j);
  if (got == want) return true;
  if (!device.is_cuda() || op != ReduceOp::avg || !std::is_floating_point_v<T> || (size & (size - 1)) == 0)
    return false;
  return std::abs(static_cast<double>(got) - static_cast<double>(want)) <=
         4.0 * size * std::numeric_limits<T>::epsilon() * std::abs(static_cast<double>(want));
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
        if (!reduced_as_expected<T>(got[static_cast<std::size_t>(j)], op, p, j, device)) ++wrong;
      EXPECT_EQ(wrong, 0) << reduce_op_name(op) << " n=" << n << (in_place ? " in place" : " out of place");
      if (!in_place) {
        EXPECT_EQ(t.to_vector<T>(), contribution<T>(r, n)) << "the input must be left alone";
      }
    }
  }
}

}  // namespace tide::test
