// The reduction functors, written once: the CPU reductions
// (cpu/reduction.cc) and the CUDA ones (cuda/reduction_kernels.cu) combine
// with the same structs. f32 and f64 sum into a double, i32 and i64 into an
// int64 (wrapping around);
// max and min keep T and let a NaN win.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "host_device.h"

namespace tide::functors {

template <typename T>
struct SumOp {
  using Acc = std::conditional_t<std::is_integral_v<T>, std::int64_t, double>;
  TIDE_HOST_DEVICE static Acc identity() { return Acc(0); }
  /// Integer sums wrap around (in unsigned arithmetic: no overflow).
  TIDE_HOST_DEVICE static Acc combine(Acc a, Acc b) {
    if constexpr (std::is_integral_v<Acc>)
      return static_cast<Acc>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
    else return a + b;
  }
};

template <typename T>
struct MaxOp {
  using Acc = T;
  /// Below or equal to every value, so an idle thread's partial never wins.
  TIDE_HOST_DEVICE static T identity() {
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
  }
  /// The larger of two values; a NaN wins (v != v tests it without a libm
  /// call), and a NaN already held stays, since nothing compares greater.
  TIDE_HOST_DEVICE static T combine(T best, T v) {
    if constexpr (std::is_floating_point_v<T>) return (v > best || v != v) ? v : best;
    else return v > best ? v : best;
  }
};

/// The smaller of two values, as MaxOp the larger: a NaN wins.
template <typename T>
struct MinOp {
  using Acc = T;
  TIDE_HOST_DEVICE static T identity() {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
  }
  TIDE_HOST_DEVICE static T combine(T best, T v) {
    if constexpr (std::is_floating_point_v<T>) return (v < best || v != v) ? v : best;
    else return v < best ? v : best;
  }
};

/// An output value from its accumulated total: mean divides the total in
/// double by len; the conversion to T happens once (i32 wraps around).
template <typename T, typename Acc>
TIDE_HOST_DEVICE T finish(Acc total, std::int64_t len, bool mean) {
  if (mean) return static_cast<T>(static_cast<double>(total) / static_cast<double>(len));
  return static_cast<T>(total);
}

}  // namespace tide::functors
