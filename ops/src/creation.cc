// Creation ops: fills, ranges, random numbers and copies of host vectors.
// On a CUDA device the same frontend pushes a closure that launches the
// kernel of ops/src/cuda/creation_kernels.h instead of the CPU loop.
#include <tide/ops/creation.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numbers>
#include <string>

#include <tide/ops/philox.h>

#include "op_util.h"
#ifdef TIDE_HAVE_CUDA
#include "cuda/creation_kernels.h"
#endif

namespace tide {

namespace {

using namespace detail;

Tensor fill(const char* name, const Shape& shape, double value, const TensorOptions& o, Loc loc) {
  Engine& e = current_engine();
  e.check_device(o.device);
  check_scalar_fits(name, value, o.dtype);
  const std::int64_t n = shape.numel();
#ifdef TIDE_HAVE_CUDA
  if (o.device.is_cuda()) {
    const DType dt = o.dtype;
    return push_new(
        e, name, shape, dt, o.device, {},
        [n, dt, value](const OpContext& ctx) {
          cuda_kernels::launch_fill(dt, ctx.out<void>(0), n, value, ctx.native_stream);
        },
        loc);
  }
#endif
  return dispatch_dtype(o.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T v = static_cast<T>(value);
    return push_new(
        e, name, shape, o.dtype, o.device, {},
        [n, v](const OpContext& ctx) {
          T* out = ctx.out<T>(0);
          for (std::int64_t i = 0; i < n; ++i) out[i] = v;
        },
        loc);
  });
}

// Random numbers. Element j = offset + i of a call is lane j % 4 of the
// Philox block of counter j / 4 under key `seed`: a uniform is that lane's
// word; normals come in pairs, lanes (0, 1) and (2, 3) being the cosine and
// sine of one Box-Muller transform of the pair's two words. So each element
// is a pure function of (seed, offset + i), whatever the device, stream or
// engine, every word is used, and a call of n elements advances the engine's
// offset by n. Values are computed in double and rounded to T once at the
// end; an f32 uniform that would round up to 1.0f becomes the largest float
// below 1.
enum class Distribution { uniform, normal };

/// The four values of block `counter`.
std::array<double, 4> philox_block(Distribution d, std::uint64_t counter, std::uint64_t seed) {
  const philox::Block b = philox::philox4x32_10(counter, seed);
  std::array<double, 4> out;
  if (d == Distribution::uniform) {
    for (int k = 0; k < 4; ++k) out[static_cast<std::size_t>(k)] = philox::to_unit(b.v[k]);
    return out;
  }
  for (int pair = 0; pair < 2; ++pair) {
    // 1 - u1 lies in (0, 1], so the log is finite.
    const double u1 = philox::to_unit(b.v[2 * pair]), u2 = philox::to_unit(b.v[2 * pair + 1]);
    const double r = std::sqrt(-2.0 * std::log(1.0 - u1));
    const double theta = 2.0 * std::numbers::pi * u2;
    out[static_cast<std::size_t>(2 * pair)] = r * std::cos(theta);
    out[static_cast<std::size_t>(2 * pair + 1)] = r * std::sin(theta);
  }
  return out;
}

Tensor random(const char* name, Distribution d, const Shape& shape, const TensorOptions& o,
              const RandomOptions& r, Loc loc) {
  Engine& e = current_engine();
  e.check_device(o.device);
  check_floating(name, o.dtype);
  const std::int64_t n = shape.numel();
  // The offset is taken after the last check and the allocation: a refused
  // call must not advance it.
  Tensor out = Tensor::empty(shape, o.dtype, o.device);
  const std::uint64_t seed = r.seed ? *r.seed : e.rng_seed();
  const std::uint64_t offset = r.seed ? 0 : e.take_rng_offset(static_cast<std::uint64_t>(n));
#ifdef TIDE_HAVE_CUDA
  if (o.device.is_cuda()) {
    const DType dt = o.dtype;
    const auto kind = d == Distribution::uniform ? cuda_kernels::RandomKind::uniform
                                                 : cuda_kernels::RandomKind::normal;
    return push_to(
        e, name, std::move(out), {},
        [n, dt, kind, seed, offset](const OpContext& ctx) {
          cuda_kernels::launch_random(kind, dt, ctx.out<void>(0), n, seed, offset, ctx.native_stream);
        },
        loc);
  }
#endif
  return dispatch_dtype(o.dtype, [&](auto tag) {
    using T = decltype(tag);
    return push_to(
        e, name, std::move(out), {},
        [n, d, seed, offset](const OpContext& ctx) {
          // A uniform double within 2^-25 of 1 rounds to 1.0f: keep [0, 1).
          constexpr T kBelowOne = 1 - std::numeric_limits<T>::epsilon() / 2;
          T* out = ctx.out<T>(0);
          std::int64_t i = 0;
          while (i < n) {
            const std::uint64_t j = offset + static_cast<std::uint64_t>(i);
            const std::array<double, 4> block = philox_block(d, j / 4, seed);
            for (std::uint64_t lane = j % 4; lane < 4 && i < n; ++lane, ++i) {
              const T v = static_cast<T>(block[lane]);
              out[i] = (d == Distribution::uniform && v >= T(1)) ? kBelowOne : v;
            }
          }
        },
        loc);
  });
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
#ifdef TIDE_HAVE_CUDA
  if (o.device.is_cuda()) {
    const DType dt = o.dtype;
    return push_new(
        e, name, Shape{n}, dt, o.device, {},
        [n, dt, start, step](const OpContext& ctx) {
          cuda_kernels::launch_arange(dt, ctx.out<void>(0), n, start, step, ctx.native_stream);
        },
        loc);
  }
#endif
  return dispatch_dtype(o.dtype, [&](auto tag) {
    using T = decltype(tag);
    return push_new(
        e, name, Shape{n}, o.dtype, o.device, {},
        [n, start, step](const OpContext& ctx) {
          T* out = ctx.out<T>(0);
          for (std::int64_t i = 0; i < n; ++i)
            out[i] = static_cast<T>(start + static_cast<double>(i) * step);
        },
        loc);
  });
}

Tensor rand(const Shape& shape, TensorOptions o, RandomOptions r, Loc loc) {
  return random("rand", Distribution::uniform, shape, o, r, loc);
}

Tensor randn(const Shape& shape, TensorOptions o, RandomOptions r, Loc loc) {
  return random("randn", Distribution::normal, shape, o, r, loc);
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device device, Loc loc) {
  Engine& e = current_engine();
  e.check_device(device);
  if (static_cast<std::uint64_t>(shape.numel()) != values.size())
    throw ShapeError("from_vector: " + std::to_string(values.size()) +
                     " values do not fill shape " + shape.str() + " (" +
                     std::to_string(shape.numel()) + " elements)");
  // The copy travels in the closure through a shared_ptr: the closure must
  // fit SmallFunction's inline buffer, and the caller may change `values`.
  auto copy = std::make_shared<const std::vector<T>>(values);
#ifdef TIDE_HAVE_CUDA
  if (device.is_cuda())
    return push_new(
        e, "from_vector", shape, dtype_v<T>, device, {},
        [copy](const OpContext& ctx) {
          cuda_kernels::copy_host_to_device(ctx.out<void>(0), copy->data(), copy->size() * sizeof(T),
                                            ctx.native_stream);
        },
        loc);
#endif
  return push_new(
      e, "from_vector", shape, dtype_v<T>, device, {},
      [copy](const OpContext& ctx) {
        if (!copy->empty()) std::memcpy(ctx.out<T>(0), copy->data(), copy->size() * sizeof(T));
      },
      loc);
}

template Tensor from_vector(const std::vector<float>&, const Shape&, Device, Loc);
template Tensor from_vector(const std::vector<double>&, const Shape&, Device, Loc);
template Tensor from_vector(const std::vector<std::int32_t>&, const Shape&, Device, Loc);

}  // namespace tide
