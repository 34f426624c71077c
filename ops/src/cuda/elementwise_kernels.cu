// The CUDA elementwise table, generated from the op lists in kernels.h over
// the functors of elementwise_functors.h (the CPU's, compiled for the
// device). Maps of contiguous arrays go through map_kernels.cuh (16-byte
// packs where every pointer is aligned, a scalar loop otherwise);
// broadcasts, strided moves, scatters and index ops have kernels here. Each
// launch is enqueued on the op's stream; n == 0 launches nothing, and a
// failed launch throws CudaError.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include <tide/core/cuda_check.h>
#include <tide/core/error.h>

#include "../elementwise_table.h"
#include "grid_util.cuh"
#include "map_kernels.cuh"

namespace tide::kernels {

namespace {

using namespace cuda_kernels;  // grid_util.cuh, map_kernels.cuh

/// out[i] = f(a[ia], b[ib]), the input offsets found from i along the map
/// (a division per axis; the map has few axes once merged). Index is 32-bit
/// where the output's count is at most kMax32: 64-bit division is several
/// times slower on the GPU.
template <typename T, typename O, typename Index, typename F>
__global__ void broadcast_kernel(const T* a, const T* b, O* out, BroadcastMap m, Index n, F f) {
  std::int64_t sa[BroadcastMap::kMaxDims], sb[BroadcastMap::kMaxDims];
  m.strides(m.a_walks, sa);
  m.strides(m.b_walks, sb);
  const Index first = static_cast<Index>(first_index()), stride = static_cast<Index>(grid_stride());
  for (Index i = first; i < n; i += stride) {
    Index rest = i, ia = 0, ib = 0;
    for (int d = m.ndim - 1; d > 0; --d) {
      const Index extent = static_cast<Index>(m.extent[d]);
      const Index k = rest % extent;
      rest /= extent;
      ia += k * static_cast<Index>(sa[d]);
      ib += k * static_cast<Index>(sb[d]);
    }
    ia += rest * static_cast<Index>(sa[0]);
    ib += rest * static_cast<Index>(sb[0]);
    out[i] = f(a[ia], b[ib]);
  }
}

/// offset + sum_d index_d * stride_d for output element i, the indices
/// found from i (a division per merged axis).
///
/// strided_move_kernel: out[i] = in[that offset] (a gather), or, Scatter,
/// out[that offset] = in[i] (a map that reaches each offset once); Index
/// 32-bit where both the count and the map's reach fit, as in
/// broadcast_kernel.
template <typename Index>
__device__ __forceinline__ Index strided_at(const StridedMap& m, Index i) {
  Index rest = i, at = static_cast<Index>(m.offset);
  for (int d = m.ndim - 1; d > 0; --d) {
    const Index extent = static_cast<Index>(m.extent[d]);
    at += (rest % extent) * static_cast<Index>(m.stride[d]);
    rest /= extent;
  }
  return at + rest * static_cast<Index>(m.stride[0]);
}

template <typename T, typename Index, bool Scatter>
__global__ void strided_move_kernel(const T* in, T* out, StridedMap m, Index n) {
  const Index first = static_cast<Index>(first_index()), stride = static_cast<Index>(grid_stride());
  for (Index i = first; i < n; i += stride) {
    if constexpr (Scatter) out[strided_at(m, i)] = in[i];
    else out[i] = in[strided_at(m, i)];
  }
}

/// atomicAdd for every dtype: CUDA has no signed 64-bit overload, and a
/// two's complement sum is the same bits in unsigned arithmetic.
template <typename T>
__device__ void atomic_add(T* at, T v) {
  if constexpr (std::is_same_v<T, std::int64_t>)
    atomicAdd(reinterpret_cast<unsigned long long*>(at), static_cast<unsigned long long>(v));
  else atomicAdd(at, v);
}

/// out[offset + sum_d index_d * stride_d] += in[i]: the gather's walk
/// in reverse. Atomic where the map reaches an element more than once (a
/// zero stride: the sum's order then varies run to run); a plain add where
/// each element is reached once (every slice, select and permute).
template <typename T, typename Index, bool Atomic>
__global__ void scatter_add_kernel(const T* in, T* out, StridedMap m, Index n) {
  const Index first = static_cast<Index>(first_index()), stride = static_cast<Index>(grid_stride());
  for (Index i = first; i < n; i += stride) {
    const Index at = strided_at(m, i);
    if constexpr (Atomic) atomic_add(out + at, in[i]);
    else out[at] = functors::Add{}(out[at], in[i]);
  }
}

/// out[o, i, j] = in[o, index[i], j], a thread per output element.
template <typename T, typename I>
__global__ void index_select_kernel(const T* in, const I* index, T* out, std::int64_t len, std::int64_t count,
                                    std::int64_t inner, std::int64_t n) {
  for (std::int64_t e = first_index(); e < n; e += grid_stride()) {
    const std::int64_t j = e % inner, t = e / inner;
    const std::int64_t i = t % count, o = t / count;
    const auto k = static_cast<std::int64_t>(index[i]);
    if (k < 0 || k >= len) __trap();  // an index out of range: the op (and the device) fails
    out[e] = in[(o * len + k) * inner + j];
  }
}

/// out[o, index[i], j] += in[o, i, j], a thread per input element; atomic,
/// since an index may repeat (the sum's order then varies run to run).
template <typename T, typename I>
__global__ void index_add_kernel(const T* in, const I* index, T* out, std::int64_t len, std::int64_t count,
                                 std::int64_t inner, std::int64_t n) {
  for (std::int64_t e = first_index(); e < n; e += grid_stride()) {
    const std::int64_t j = e % inner, t = e / inner;
    const std::int64_t i = t % count, o = t / count;
    const auto k = static_cast<std::int64_t>(index[i]);
    if (k < 0 || k >= len) __trap();
    atomic_add(out + (o * len + k) * inner + j, in[e]);
  }
}

/// Whether `m` reaches an element twice: some axis of extent > 1 has
/// stride 0, or two axes' reaches overlap (sorted by stride, each must step
/// past everything the smaller ones span).
inline bool overlaps(const StridedMap& m) {
  std::int64_t step[StridedMap::kMaxDims], ext[StridedMap::kMaxDims];
  int k = 0;
  for (int d = 0; d < m.ndim; ++d) {
    if (m.extent[d] <= 1) continue;
    if (m.stride[d] == 0) return true;
    step[k] = m.stride[d] < 0 ? -m.stride[d] : m.stride[d];
    ext[k++] = m.extent[d];
  }
  for (int i = 1; i < k; ++i)  // insertion sort by step: at most 6 axes
    for (int j = i; j > 0 && step[j] < step[j - 1]; --j) {
      std::swap(step[j], step[j - 1]);
      std::swap(ext[j], ext[j - 1]);
    }
  std::int64_t span = 0;  // the farthest the smaller axes reach
  for (int i = 0; i < k; ++i) {
    if (step[i] <= span) return true;
    span += step[i] * (ext[i] - 1);
  }
  return false;
}

/// The largest offset a map reaches: every offset lies in [0, reach] (the
/// strided tensor holds at most 2^63 elements, so this does not overflow).
std::int64_t reach_of(const StridedMap& m) {
  std::int64_t reach = m.offset;
  for (int d = 0; d < m.ndim; ++d) reach += (m.extent[d] - 1) * (m.stride[d] > 0 ? m.stride[d] : 0);
  return reach;
}

/// A gather along m (out contiguous), or a scatter (in contiguous).
template <typename T, bool Scatter>
void launch_move(const void* in, void* out, const StridedMap& m, void* stream) {
  const std::int64_t n = m.numel();
  if (n == 0) return;
  const auto* x = static_cast<const T*>(in);
  auto* o = static_cast<T*>(out);
  if (n <= kMax32 && reach_of(m) <= kMax32)
    strided_move_kernel<T, std::int32_t, Scatter><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(
        x, o, m, static_cast<std::int32_t>(n));
  else
    strided_move_kernel<T, std::int64_t, Scatter><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(x, o, m, n);
  TIDE_CUDA_LAUNCH_CHECK();
}

template <typename T, bool Atomic>
void launch_scatter_add(const T* x, T* o, const StridedMap& m, std::int64_t n, std::int64_t reach, void* stream) {
  if (n <= kMax32 && reach <= kMax32)
    scatter_add_kernel<T, std::int32_t, Atomic><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(
        x, o, m, static_cast<std::int32_t>(n));
  else
    scatter_add_kernel<T, std::int64_t, Atomic><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(x, o, m, n);
  TIDE_CUDA_LAUNCH_CHECK();
}

/// The launches behind the table (elementwise_table.h).
struct CudaMaps {
  template <typename T, typename O, typename F>
  static void map1(const void* a, void* out, std::int64_t n, F f, void* stream) {
    launch_map<O>(out, n, f, stream, static_cast<const T*>(a));
  }

  /// Element by element: the packed path needs one type in and out.
  template <typename S, typename D>
  static void convert(const void* in, void* out, std::int64_t n, void* stream) {
    if (n == 0) return;
    map_kernel<D><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(
        static_cast<D*>(out), n, functors::ConvertTo<D>{}, static_cast<const S*>(in));
    TIDE_CUDA_LAUNCH_CHECK();
  }

  /// The scalar grid-stride loop: cond and the values differ in width, so
  /// they share no pack.
  template <typename C, typename T>
  static void where(const void* cond, const void* a, const void* b, void* out, std::int64_t n, void* stream) {
    if (n == 0) return;
    map_kernel<T><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(static_cast<T*>(out), n, functors::Where{},
                                                                    static_cast<const C*>(cond),
                                                                    static_cast<const T*>(a), static_cast<const T*>(b));
    TIDE_CUDA_LAUNCH_CHECK();
  }

  template <typename T, typename O, typename F>
  static void map2(const void* a, const void* b, void* out, std::int64_t n, F f, void* stream) {
    launch_map<O>(out, n, f, stream, static_cast<const T*>(a), static_cast<const T*>(b));
  }

  template <typename T, typename O, typename F>
  static void map2_broadcast(const void* a, const void* b, void* out, const BroadcastMap& m, F f, void* stream) {
    const std::int64_t n = m.numel();
    if (n == 0) return;
    const auto* x = static_cast<const T*>(a);
    const auto* y = static_cast<const T*>(b);
    auto* o = static_cast<O*>(out);
    if constexpr (std::is_same_v<T, O>) {
      if (launch_broadcast_packs<T>(x, y, o, m, f, stream)) return;
    }
    if (n <= kMax32)
      broadcast_kernel<T, O, std::int32_t><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(
          x, y, o, m, static_cast<std::int32_t>(n), f);
    else
      broadcast_kernel<T, O, std::int64_t><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(x, y, o, m, n, f);
    TIDE_CUDA_LAUNCH_CHECK();
  }

  template <typename T>
  static void gather(const void* in, void* out, const StridedMap& m, void* stream) {
    launch_move<T, false>(in, out, m, stream);
  }

  template <typename T, typename I>
  static void index_select(const void* in, const void* index, void* out, std::int64_t outer, std::int64_t len,
                           std::int64_t count, std::int64_t inner, void* stream) {
    const std::int64_t n = outer * count * inner;
    if (n == 0) return;
    index_select_kernel<T, I><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(
        static_cast<const T*>(in), static_cast<const I*>(index), static_cast<T*>(out), len, count, inner, n);
    TIDE_CUDA_LAUNCH_CHECK();
  }

  template <typename T, typename I>
  static void index_add(const void* in, const void* index, void* out, std::int64_t outer, std::int64_t len,
                        std::int64_t count, std::int64_t inner, void* stream) {
    const std::int64_t n = outer * count * inner;
    if (n == 0) return;
    index_add_kernel<T, I><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(
        static_cast<const T*>(in), static_cast<const I*>(index), static_cast<T*>(out), len, count, inner, n);
    TIDE_CUDA_LAUNCH_CHECK();
  }

  template <typename T>
  static void scatter(const void* in, void* out, const StridedMap& m, void* stream) {
    launch_move<T, true>(in, out, m, stream);
  }

  template <typename T>
  static void scatter_add(const void* in, void* out, const StridedMap& m, void* stream) {
    const std::int64_t n = m.numel();
    if (n == 0) return;
    const std::int64_t reach = reach_of(m);
    const auto* x = static_cast<const T*>(in);
    auto* o = static_cast<T*>(out);
    if (overlaps(m)) launch_scatter_add<T, true>(x, o, m, n, reach, stream);
    else launch_scatter_add<T, false>(x, o, m, n, reach, stream);
  }
};

}  // namespace

const Elementwise cuda_elementwise = ElementwiseTable<CudaMaps>::make();

}  // namespace tide::kernels
