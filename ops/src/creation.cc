// Creation ops: fills, ranges, random numbers and copies of host vectors.
// The frontend checks and allocates; the kernels are the device kind's
// creation table (kernels.h).
#include <tide/ops/creation.h>

#include <cmath>
#include <memory>
#include <string>

#include "kernels.h"
#include "op_util.h"

namespace tide {

namespace {

using namespace detail;

Tensor fill(const char* name, const Shape& shape, double value, const TensorOptions& o, Loc loc) {
  Engine& e = current_engine();
  e.check_device(o.device);
  check_scalar_fits(name, value, o.dtype);
  const auto fn = kernels::kernel_for(name, o.device, kernels::creation(o.device).fill);
  const std::int64_t n = shape.numel();
  const DType dt = o.dtype;
  return push_new(
      e, name, shape, dt, o.device, {},
      [fn, dt, n, value](const OpContext& ctx) { fn(dt, ctx.out<void>(0), n, value, ctx.native_stream); },
      loc, -1, true);
}

// Random numbers. Element j = offset + i of a call is lane j % 4 of the
// Philox block of counter j / 4 under key `seed`: a uniform is that lane's
// word; normals come in pairs, lanes (0, 1) and (2, 3) being the cosine and
// sine of one Box-Muller transform of the pair's two words. So each element
// is a pure function of (seed, offset + i), whatever the device, stream or
// engine, every word is used, and a call of n elements advances the engine's
// offset by n. Uniforms and f64 normals are computed in double and rounded
// to T once at the end; an f32 uniform that would round up to 1.0f becomes
// the largest float below 1. f32 normals are computed in float by
// normal_f32.h, whose every step is an IEEE-rounded operation (no libm), so
// they too are the same bits on every backend. The kernels: cpu/creation.cc
// and cuda/creation_kernels.cu.
using kernels::RandomKind;

Tensor random(const char* name, RandomKind kind, const Shape& shape, const TensorOptions& o,
              const RandomOptions& r, Loc loc) {
  Engine& e = current_engine();
  e.check_device(o.device);
  check_floating(name, o.dtype);
  const auto fn = kernels::kernel_for(name, o.device, kernels::creation(o.device).random);
  const std::int64_t n = shape.numel();
  // The offset is taken after the last check and the allocation: a refused
  // call must not advance it.
  Tensor out = Tensor::empty(shape, o.dtype, o.device);
  const std::uint64_t seed = r.seed ? *r.seed : e.rng_seed();
  const std::uint64_t offset = r.seed ? 0 : e.take_rng_offset(static_cast<std::uint64_t>(n));
  const DType dt = o.dtype;
  return push_to(
      e, name, std::move(out), {},
      [fn, kind, dt, n, seed, offset](const OpContext& ctx) {
        fn(kind, dt, ctx.out<void>(0), n, seed, offset, ctx.native_stream);
      },
      loc);
}

}  // namespace

Tensor zeros(const Shape& shape, TensorOptions o, Loc loc) { return fill("zeros", shape, 0.0, o, loc); }
Tensor ones(const Shape& shape, TensorOptions o, Loc loc) { return fill("ones", shape, 1.0, o, loc); }
Tensor full(const Shape& shape, double value, TensorOptions o, Loc loc) {
  return fill("full", shape, value, o, loc);
}

Tensor arange(double start, double stop, double step, TensorOptions o, Loc loc) {
  const char* name = "arange";
  Engine& e = current_engine();
  e.check_device(o.device);
  if (step == 0.0) throw ValueError("arange: step must not be 0");
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    throw ValueError("arange: start, stop and step must be finite");
  if (o.dtype == DType::b8) throw DTypeError("arange: takes a number dtype, not bool");
  const double count = std::ceil((stop - start) / step);
  // Far beyond any allocation, and keeps the conversion to int64 defined.
  constexpr double kMaxCount = 0x1p53;
  if (count > kMaxCount)
    throw ValueError("arange: " + std::to_string(count) + " elements is too many");
  const std::int64_t n = count > 0 ? static_cast<std::int64_t>(count) : 0;
  if (n > 0) {
    check_scalar_fits(name, start, o.dtype);
    check_scalar_fits(name, start + static_cast<double>(n - 1) * step, o.dtype);
  }
  const auto fn = kernels::kernel_for(name, o.device, kernels::creation(o.device).arange);
  const DType dt = o.dtype;
  return push_new(
      e, name, Shape{n}, dt, o.device, {},
      [fn, dt, n, start, step](const OpContext& ctx) {
        fn(dt, ctx.out<void>(0), n, start, step, ctx.native_stream);
      },
      loc, -1, true);
}

Tensor rand(const Shape& shape, TensorOptions o, RandomOptions r, Loc loc) {
  return random("rand", RandomKind::uniform, shape, o, r, loc);
}

Tensor randn(const Shape& shape, TensorOptions o, RandomOptions r, Loc loc) {
  return random("randn", RandomKind::normal, shape, o, r, loc);
}

namespace {

void check_fills(std::size_t n, const Shape& shape) {
  if (static_cast<std::uint64_t>(shape.numel()) != n)
    throw ShapeError("from_vector: " + std::to_string(n) + " values do not fill shape " + shape.str() + " (" +
                     std::to_string(shape.numel()) + " elements)");
}

/// The op that fills a new tensor from `copy`. The copy travels in the
/// closure through a shared_ptr: the closure must fit SmallFunction's
/// inline buffer.
template <typename T>
Tensor push_from_host(Engine& e, std::shared_ptr<const std::vector<T>> copy, const Shape& shape, Device device,
                      Loc loc, DType dtype = dtype_v<T>) {
  const auto fn = kernels::kernel_for("from_vector", device, kernels::creation(device).from_host);
  return push_new(
      e, "from_vector", shape, dtype, device, {},
      [fn, copy](const OpContext& ctx) {
        fn(ctx.out<void>(0), copy->data(), copy->size() * sizeof(T), ctx.native_stream);
      },
      loc, -1, true);
}

}  // namespace

template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device device, Loc loc) {
  Engine& e = current_engine();
  e.check_device(device);
  check_fills(values.size(), shape);
  // Copied now: the caller may change `values` afterwards.
  return push_from_host<T>(e, std::make_shared<const std::vector<T>>(values), shape, device, loc);
}

template <typename T>
Tensor from_vector(std::vector<T>&& values, const Shape& shape, Device device, Loc loc) {
  Engine& e = current_engine();
  e.check_device(device);
  check_fills(values.size(), shape);
  return push_from_host<T>(e, std::make_shared<const std::vector<T>>(std::move(values)), shape, device, loc);
}

/// std::vector<bool> packs its bits: its values are copied out as bytes.
template <>
Tensor from_vector(const std::vector<bool>& values, const Shape& shape, Device device, Loc loc) {
  Engine& e = current_engine();
  e.check_device(device);
  check_fills(values.size(), shape);
  auto bytes = std::make_shared<const std::vector<std::uint8_t>>(values.begin(), values.end());
  return push_from_host<std::uint8_t>(e, std::move(bytes), shape, device, loc, DType::b8);
}

template <>
Tensor from_vector(std::vector<bool>&& values, const Shape& shape, Device device, Loc loc) {
  return from_vector(static_cast<const std::vector<bool>&>(values), shape, device, loc);
}

template Tensor from_vector(const std::vector<float>&, const Shape&, Device, Loc);
template Tensor from_vector(const std::vector<double>&, const Shape&, Device, Loc);
template Tensor from_vector(const std::vector<std::int32_t>&, const Shape&, Device, Loc);
template Tensor from_vector(std::vector<float>&&, const Shape&, Device, Loc);
template Tensor from_vector(std::vector<double>&&, const Shape&, Device, Loc);
template Tensor from_vector(std::vector<std::int32_t>&&, const Shape&, Device, Loc);
template Tensor from_vector(const std::vector<std::int64_t>&, const Shape&, Device, Loc);
template Tensor from_vector(std::vector<std::int64_t>&&, const Shape&, Device, Loc);

}  // namespace tide
