// Reductions. A tensor reduced along `axis` is viewed as [outer, len, inner]
// (len = the axis extent); reducing every element is the case outer = inner
// = 1, len = numel, so one kernel per reduction serves both.
//
// Accumulation: f32 and f64 sum into a double, i32 into an int64, element by
// element in index order along the axis, and the total is converted to the
// tensor's dtype once at the end (i32 wraps around, as C++20 defines). The
// order is fixed, so results are bitwise reproducible run to run and equal to
// a plain sequential loop in double. mean divides that double total by len.
//
// On a CUDA device the same checks push a closure that launches
// ops/src/cuda/reduction_kernels.h: the same accumulator types, a fixed
// tree order instead of the sequential one (reproducible, but float sums
// may differ from the CPU's in the last bit).
#include <tide/ops/reduction.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "op_util.h"
#ifdef TIDE_HAVE_CUDA
#include "cuda/reduction_kernels.h"
#endif

namespace tide {

namespace {

using namespace detail;

template <typename T>
using Accumulator = std::conditional_t<std::is_same_v<T, std::int32_t>, std::int64_t, double>;

struct Extents {
  std::int64_t outer = 1, len = 1, inner = 1;
};

Extents extents_all(const Shape& s) { return {1, s.numel(), 1}; }

Extents extents_along(const Shape& s, int axis) {
  Extents x;
  for (int d = 0; d < axis; ++d) x.outer *= s[d];
  x.len = s[axis];
  for (int d = axis + 1; d < s.ndim(); ++d) x.inner *= s[d];
  return x;
}


template <typename T>
void sum_kernel(const T* in, T* out, Extents x, bool mean) {
  // One running total per inner position, so the input is read in order.
  std::vector<Accumulator<T>> acc(static_cast<std::size_t>(x.inner));
  for (std::int64_t o = 0; o < x.outer; ++o) {
    std::fill(acc.begin(), acc.end(), Accumulator<T>(0));
    const T* block = in + o * x.len * x.inner;
    for (std::int64_t k = 0; k < x.len; ++k) {
      const T* row = block + k * x.inner;
      for (std::int64_t j = 0; j < x.inner; ++j) acc[static_cast<std::size_t>(j)] += row[j];
    }
    T* dst = out + o * x.inner;
    for (std::int64_t j = 0; j < x.inner; ++j) {
      const auto total = acc[static_cast<std::size_t>(j)];
      dst[j] = mean ? static_cast<T>(static_cast<double>(total) / static_cast<double>(x.len))
                    : static_cast<T>(total);
    }
  }
}

/// The larger of two values; a NaN wins, so it propagates to the result.
template <typename T>
T max_of(T best, T v) {
  if constexpr (std::is_floating_point_v<T>) return (v > best || std::isnan(v)) ? v : best;
  else return v > best ? v : best;
}

template <typename T>
void max_kernel(const T* in, T* out, Extents x) {  // x.len >= 1
  for (std::int64_t o = 0; o < x.outer; ++o) {
    const T* block = in + o * x.len * x.inner;
    T* dst = out + o * x.inner;
    for (std::int64_t j = 0; j < x.inner; ++j) dst[j] = block[j];
    for (std::int64_t k = 1; k < x.len; ++k) {
      const T* row = block + k * x.inner;
      for (std::int64_t j = 0; j < x.inner; ++j) dst[j] = max_of(dst[j], row[j]);
    }
  }
}

enum class Kind { sum, mean, max };

/// Checks done by the caller except the kind's own: those are here.
Tensor reduce(const char* name, Kind kind, Engine& e, const Tensor& a, const Shape& out_shape,
              Extents x, Loc loc) {
  if (kind == Kind::mean) check_floating(name, a.dtype());
  if (kind == Kind::max && x.len == 0)
    throw ValueError(op_prefix(name) + "no elements to reduce in a tensor of shape " +
                     a.shape().str());
#ifdef TIDE_HAVE_CUDA
  if (a.device().is_cuda()) {
    const DType dt = a.dtype();
    const auto op = kind == Kind::sum    ? cuda_kernels::ReduceOp::sum
                    : kind == Kind::mean ? cuda_kernels::ReduceOp::mean
                                         : cuda_kernels::ReduceOp::max;
    return push_new(
        e, name, out_shape, dt, a.device(), {a.storage()},
        [x, dt, op](const OpContext& ctx) {
          cuda_kernels::launch_reduce(op, dt, ctx.in<void>(0), ctx.out<void>(0), x.outer, x.len,
                                      x.inner, ctx.native_stream);
        },
        loc);
  }
#endif
  return dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return push_new(
        e, name, out_shape, a.dtype(), a.device(), {a.storage()},
        [x, kind](const OpContext& ctx) {
          if (kind == Kind::max) max_kernel(ctx.in<T>(0), ctx.out<T>(0), x);
          else sum_kernel(ctx.in<T>(0), ctx.out<T>(0), x, kind == Kind::mean);
        },
        loc);
  });
}

Tensor reduce_all(const char* name, Kind kind, const Tensor& a, Loc loc) {
  Engine& e = engine_for(name, a);
  return reduce(name, kind, e, a, Shape{}, extents_all(a.shape()), loc);
}

Tensor reduce_along(const char* name, Kind kind, const Tensor& a, int axis, Loc loc) {
  Engine& e = engine_for(name, a);
  const int ax = normalize_axis(name, a, axis);
  return reduce(name, kind, e, a, a.shape().without(ax), extents_along(a.shape(), ax), loc);
}

}  // namespace

Tensor sum(const Tensor& a, Loc loc) { return reduce_all("sum", Kind::sum, a, loc); }
Tensor sum(const Tensor& a, int axis, Loc loc) { return reduce_along("sum", Kind::sum, a, axis, loc); }
Tensor mean(const Tensor& a, Loc loc) { return reduce_all("mean", Kind::mean, a, loc); }
Tensor mean(const Tensor& a, int axis, Loc loc) { return reduce_along("mean", Kind::mean, a, axis, loc); }
Tensor max(const Tensor& a, Loc loc) { return reduce_all("max", Kind::max, a, loc); }
Tensor max(const Tensor& a, int axis, Loc loc) { return reduce_along("max", Kind::max, a, axis, loc); }

}  // namespace tide
