// CUDA creation kernels: fills, ranges and Philox random numbers that match
// the CPU backend bit for bit (ops/src/creation.cc holds the scheme).
#include "creation_kernels.h"

#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <type_traits>

#include <tide/core/cuda_check.h>
#include <tide/core/error.h>
#include <tide/ops/normal_f32.h>
#include <tide/ops/philox.h>

#include "grid_util.cuh"

namespace tide::cuda_kernels {

namespace {

template <typename T>
__global__ void fill_kernel(T* out, std::int64_t n, T value) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) out[i] = value;
}

/// The same by 16-byte stores (`out` 16-byte aligned): the whole packs in a
/// grid-stride loop, then the elements past the last of them. Stores need
/// no unrolling to keep bytes in flight: a thread does not wait for them.
template <typename T>
__global__ void fill_packs_kernel(T* out, std::int64_t n, T value) {
  using P = Pack16<T>;
  P p;
#pragma unroll
  for (int k = 0; k < P::kWidth; ++k) p.v[k] = value;
  const std::int64_t packs = n / P::kWidth;
  auto* dst = reinterpret_cast<P*>(out);
  for (std::int64_t i = first_index(); i < packs; i += grid_stride()) dst[i] = p;
  for (std::int64_t i = packs * P::kWidth + first_index(); i < n; i += grid_stride()) out[i] = value;
}

template <typename T>
__global__ void arange_kernel(T* out, std::int64_t n, double start, double step) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    // Explicitly rounded multiply and add: nvcc would otherwise contract
    // start + i * step into one fma, which rounds once where the CPU rounds
    // twice, and the values would differ in the last bit.
    const double v = __dadd_rn(start, __dmul_rn(static_cast<double>(i), step));
    out[i] = static_cast<T>(v);
  }
}

/// One thread per Philox block: block c covers counter positions 4c..4c+3,
/// of which those in [offset, offset + n) are written. Each value is
/// computed with the CPU's expressions (no operation here can be contracted
/// into an fma): f32 normals in float by normal_f32.h, the rest in double,
/// rounded to T once.
template <typename T, bool Normal>
__global__ void random_kernel(T* out, std::int64_t n, std::uint64_t seed, std::uint64_t offset) {
  // A uniform double within 2^-25 of 1 rounds to 1.0f: keep [0, 1).
  constexpr T kBelowOne = 1 - std::numeric_limits<T>::epsilon() / 2;
  const std::uint64_t first_block = offset / 4;
  const std::uint64_t blocks = (offset + static_cast<std::uint64_t>(n) - 1) / 4 - first_block + 1;
  for (std::uint64_t t = static_cast<std::uint64_t>(first_index()); t < blocks;
       t += static_cast<std::uint64_t>(grid_stride())) {
    const std::uint64_t counter = first_block + t;
    const philox::Block b = philox::philox4x32_10(counter, seed);
    T x[4];
    if constexpr (Normal && std::is_same_v<T, float>) {
      // f32 normals: the float transform the CPU runs (normal_f32.h),
      // stored as they come (no round trip through double).
      normal_f32::pair(b.v[0], b.v[1], x[0], x[1]);
      normal_f32::pair(b.v[2], b.v[3], x[2], x[3]);
    } else {
      double v[4];
      if constexpr (Normal) {
        for (int pair = 0; pair < 2; ++pair) {
          // 1 - u1 lies in (0, 1], so the log is finite.
          const double u1 = philox::to_unit(b.v[2 * pair]), u2 = philox::to_unit(b.v[2 * pair + 1]);
          const double r = sqrt(-2.0 * log(1.0 - u1));
          const double theta = 2.0 * std::numbers::pi * u2;
          v[2 * pair] = r * cos(theta);
          v[2 * pair + 1] = r * sin(theta);
        }
      } else {
        for (int k = 0; k < 4; ++k) v[k] = philox::to_unit(b.v[k]);
      }
      for (int lane = 0; lane < 4; ++lane) {
        const T y = static_cast<T>(v[lane]);
        x[lane] = (!Normal && y >= T(1)) ? kBelowOne : y;
      }
    }
    // A whole block inside the output, 16-byte aligned there (every block
    // but the ends when the offset is a multiple of 4): one or two 16-byte
    // stores, where four scalar ones would each write a quarter of the
    // warp's sectors.
    const std::uint64_t j0 = 4 * counter;
    if (j0 >= offset && j0 - offset + 4 <= static_cast<std::uint64_t>(n)) {
      T* dst = out + (j0 - offset);
      if (reinterpret_cast<std::uintptr_t>(dst) % 16 == 0) {
        if constexpr (sizeof(T) == 4) {
          *reinterpret_cast<float4*>(dst) = make_float4(x[0], x[1], x[2], x[3]);
        } else {
          reinterpret_cast<double2*>(dst)[0] = make_double2(x[0], x[1]);
          reinterpret_cast<double2*>(dst)[1] = make_double2(x[2], x[3]);
        }
        continue;
      }
    }
    for (int lane = 0; lane < 4; ++lane) {
      const std::uint64_t j = j0 + static_cast<std::uint64_t>(lane);
      if (j < offset) continue;
      const std::uint64_t i = j - offset;
      if (i >= static_cast<std::uint64_t>(n)) break;
      out[i] = x[lane];
    }
  }
}

}  // namespace

void launch_fill(DType dtype, void* out, std::int64_t n, double value, void* stream) {
  if (n == 0) return;
  dispatch_dtype_or_bool(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto* to = static_cast<T*>(out);
    if (aligned16(out)) {
      // One thread per pack (the tail's few elements go to the first threads).
      const std::int64_t packs = std::max<std::int64_t>(n / Pack16<T>::kWidth, 1);
      fill_packs_kernel<T><<<grid_for(packs), kThreads, 0, as_stream(stream)>>>(to, n, static_cast<T>(value));
    } else {
      fill_kernel<T><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(to, n, static_cast<T>(value));
    }
    TIDE_CUDA_LAUNCH_CHECK();
  });
}

void launch_arange(DType dtype, void* out, std::int64_t n, double start, double step, void* stream) {
  if (n == 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    arange_kernel<T><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(static_cast<T*>(out), n,
                                                                      start, step);
    TIDE_CUDA_LAUNCH_CHECK();
  });
}

void launch_random(RandomKind kind, DType dtype, void* out, std::int64_t n, std::uint64_t seed,
                   std::uint64_t offset, void* stream) {
  if (n == 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      // Blocks touched: at most n / 4 + 2 (a partial block at each end).
      const std::int64_t blocks = n / 4 + 2;
      auto* o = static_cast<T*>(out);
      if (kind == RandomKind::normal)
        random_kernel<T, true><<<grid_for(blocks), kThreads, 0, as_stream(stream)>>>(o, n, seed, offset);
      else
        random_kernel<T, false><<<grid_for(blocks), kThreads, 0, as_stream(stream)>>>(o, n, seed, offset);
      TIDE_CUDA_LAUNCH_CHECK();
    } else {
      throw DTypeError("launch_random: needs a floating dtype (f32 or f64)");
    }
  });
}

void copy_host_to_device(void* dst, const void* src, std::size_t nbytes, void* stream) {
  if (nbytes == 0) return;
  // From pageable memory the call returns only once the bytes are staged,
  // so the caller's buffer may go right after; the price is that the driver
  // first waits for the stream's earlier work (CUDA's "API synchronization
  // behavior"), which stalls this stream's worker, not the frontend.
  TIDE_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, as_stream(stream)));
}

}  // namespace tide::cuda_kernels
