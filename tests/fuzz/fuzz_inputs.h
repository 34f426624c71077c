// Random arguments for the bad-input fuzz test: shapes (negative, zero,
// huge, overflowing), dtypes (invalid values too), devices (beyond the
// engine's, CUDA without a GPU), scalars and tensors (undefined, of a
// destroyed engine, aliased). Each draw appends what it chose to `desc`, so
// a failing case can be read back.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <tide/tide.h>

namespace tide::fuzz {

constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();

class Inputs {
 public:
  explicit Inputs(std::uint64_t seed) : rng_(seed) {}

  std::string desc;

  int below(int n) { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n)); }
  bool chance(int percent) { return below(100) < percent; }
  template <typename T>
  T pick(std::initializer_list<T> options) {
    return options.begin()[below(static_cast<int>(options.size()))];
  }

  /// Extents of a shape, unchecked (the Shape constructor may refuse them).
  /// Half are small and valid. Any other shape that has elements needs 16
  /// TiB or more, or overflows: so no accepted call allocates much.
  std::vector<std::int64_t> extents() {
    std::vector<std::int64_t> dims;
    const bool hostile = chance(50);
    const int ndim = hostile ? below(8) : below(5);
    for (int i = 0; i < ndim; ++i) {
      if (!hostile || chance(50)) {
        dims.push_back(below(5));
      } else if (chance(15)) {
        dims.push_back(std::int64_t{1} << 31);  // a pair: 2^62 elements, whose bytes overflow
        dims.push_back(std::int64_t{1} << 31);
      } else {
        dims.push_back(pick<std::int64_t>({-1, -(std::int64_t{1} << 40), kI64Min, std::int64_t{1} << 42,
                                           std::int64_t{1} << 62, kI64Max}));
      }
    }
    desc += "shape {";
    for (std::size_t i = 0; i < dims.size(); ++i) desc += (i ? ", " : "") + std::to_string(dims[i]);
    desc += "} ";
    return dims;
  }

  /// A Shape built from extents(): throws tide::ShapeError for a bad one.
  Shape shape() {
    const std::vector<std::int64_t> dims = extents();
    return Shape(dims.begin(), dims.end());
  }

  DType dtype() {
    const DType t = chance(90) ? pick({DType::f32, DType::f64, DType::i32, DType::i64})
                               : static_cast<DType>(pick<std::uint8_t>({4, 77, 255}));
    desc += "dtype " + std::to_string(static_cast<int>(t)) + " ";
    return t;
  }

  /// cpu:0 and cpu:1 exist; the others do not (no GPU in this engine).
  Device device() {
    const Device d = chance(80) ? cpu(below(2))
                                : pick({cpu(2), cpu(kMaxCpuDevices), Device{DeviceKind::cpu, -1}, cuda(0), cuda(1),
                                        Device{DeviceKind::cuda, -3}});
    desc += "device " + std::string(d.is_cpu() ? "cpu:" : "cuda:") + std::to_string(d.index) + " ";
    return d;
  }

  double scalar() {
    const double s = pick<double>({0.0, 1.0, -2.5, 3.0, 1e10, -1e300, 2147483648.0,
                                   std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                                   -std::numeric_limits<double>::infinity(), 1e-300});
    desc += "scalar " + std::to_string(s) + " ";
    return s;
  }

  int axis() {
    const int a = chance(80) ? below(9) - 4 : pick({std::numeric_limits<int>::min(), std::numeric_limits<int>::max()});
    desc += "axis " + std::to_string(a) + " ";
    return a;
  }

  std::int64_t count() {
    const std::int64_t c = pick<std::int64_t>({0, 1, 2, 7, -1, kI64Min, kI64Max});
    desc += "count " + std::to_string(c) + " ";
    return c;
  }

  int rank_arg() {
    const int r = pick({0, 0, 1, -1, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()});
    desc += "rank " + std::to_string(r) + " ";
    return r;
  }

  ReduceOp reduce_op() {
    const ReduceOp op = chance(90) ? pick({ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min})
                                   : static_cast<ReduceOp>(pick({4, 99, -1}));
    desc += "reduce " + std::to_string(static_cast<int>(op)) + " ";
    return op;
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace tide::fuzz
