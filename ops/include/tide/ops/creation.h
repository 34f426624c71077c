// Creation ops: each returns at once with a tensor whose values are written
// by an op on the backend.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <tide/core/loc.h>
#include <tide/core/tensor.h>

namespace tide {

/// Where and of what type a created tensor is.
struct TensorOptions {
  DType dtype = DType::f32;
  Device device = cpu(0);
};

Tensor zeros(const Shape& shape, TensorOptions o = {}, Loc loc = Loc::current());
Tensor ones(const Shape& shape, TensorOptions o = {}, Loc loc = Loc::current());
Tensor full(const Shape& shape, double value, TensorOptions o = {}, Loc loc = Loc::current());
/// [start, stop) in steps of `step` (a 1-D tensor); step must not be 0.
Tensor arange(double start, double stop, double step = 1.0, TensorOptions o = {},
              Loc loc = Loc::current());

/// Random numbers from counter-based Philox4x32-10: element i of a call is a
/// pure function of (seed, offset + i), so a seed gives the same numbers on
/// every backend and stream. Without a seed, the engine's seed is used and
/// its offset advanced (see Engine::manual_seed). Floating dtypes only.
struct RandomOptions {
  std::optional<std::uint64_t> seed;  // fixed seed, offset 0
};
/// Uniform in [0, 1).
Tensor rand(const Shape& shape, TensorOptions o = {}, RandomOptions r = {}, Loc loc = Loc::current());
/// Standard normal (Box-Muller).
Tensor randn(const Shape& shape, TensorOptions o = {}, RandomOptions r = {}, Loc loc = Loc::current());

/// A tensor holding a copy of `values` (taken now, so the vector may change
/// afterwards). numel(shape) must equal values.size().
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device device = cpu(0),
                   Loc loc = Loc::current());

/// The same, taking `values` over (no copy: for large host data).
template <typename T>
Tensor from_vector(std::vector<T>&& values, const Shape& shape, Device device = cpu(0), Loc loc = Loc::current());

/// A 1-D tensor from `values`.
template <typename T>
Tensor from_vector(const std::vector<T>& values, Device device = cpu(0), Loc loc = Loc::current()) {
  return from_vector(values, Shape{static_cast<std::int64_t>(values.size())}, device, loc);
}

/// A bool tensor (dtype b8) from std::vector<bool>.
template <>
Tensor from_vector(const std::vector<bool>& values, const Shape& shape, Device device, Loc loc);
template <>
Tensor from_vector(std::vector<bool>&& values, const Shape& shape, Device device, Loc loc);

extern template Tensor from_vector(const std::vector<float>&, const Shape&, Device, Loc);
extern template Tensor from_vector(const std::vector<double>&, const Shape&, Device, Loc);
extern template Tensor from_vector(const std::vector<std::int32_t>&, const Shape&, Device, Loc);
extern template Tensor from_vector(const std::vector<std::int64_t>&, const Shape&, Device, Loc);

}  // namespace tide
