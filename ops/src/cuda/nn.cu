// The nn kernels on CUDA devices (see nn_kernels.h). Every kernel loops with
// a grid stride (over 32-bit indices where the count allows, else 64-bit),
// so any size runs with a capped grid, and no launch is made for an empty
// range (a grid of 0 blocks is an error).
#include "nn_kernels.h"
#include "reduction_kernels.h"

#include <cuda/atomic>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <tide/core/cuda_check.h>

#include "grid_util.cuh"
#include "map_kernels.cuh"
#include "scratch.cuh"

namespace tide::cuda_kernels {

namespace {

// A power of two: the block reductions below halve it.
constexpr int kBlock = kThreads;  // grid_util.cuh, with first_index, grid_stride and kMaxBlocks
static_assert((kBlock & (kBlock - 1)) == 0);

unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(std::min<std::int64_t>((n + kBlock - 1) / kBlock, kMaxBlocks));
}

template <typename T>
__device__ T quiet_nan() {
  return std::numeric_limits<T>::quiet_NaN();
}

/// The max (ignoring NaN: a NaN still reaches every row value through exp)
/// or the sum of v over the block; every thread gets the result. `red` holds
/// kBlock doubles; every thread of the block must call this.
__device__ double block_reduce(double v, double* red, bool is_max) {
  const int tid = static_cast<int>(threadIdx.x);
  red[tid] = v;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (tid < s) red[tid] = is_max ? fmax(red[tid], red[tid + s]) : red[tid] + red[tid + s];
    __syncthreads();
  }
  const double r = red[0];
  __syncthreads();  // before `red` is written again
  return r;
}

// ---------------------------------------------------------------------------
// Linear layer.

/// y[r, c] += b[c] over y [rows, cols], element by element: the path for
/// rows whose length is not a whole number of packs, or unaligned pointers.
/// Index is 32-bit where the count allows (a 64-bit remainder per element
/// costs more than the element's memory traffic).
template <typename T, typename Index>
__global__ void add_row_bias_kernel(T* y, const T* b, Index n, Index cols) {
  const Index first = static_cast<Index>(first_index()), stride = static_cast<Index>(grid_stride());
  for (Index i = first; i < n; i += stride) y[i] += b[i % cols];
}

/// y + b, as y[i] += b[c] rounds it.
struct AddBias {
  template <typename T>
  __device__ T operator()(T y, T b) const {
    return y + b;
  }
};

/// relu's gradient, dy where x > 0 and 0 elsewhere (at the kink, and where x
/// is NaN): an elementwise map of (dy, x), by 16-byte packs where it can
/// (map_kernels.cuh).
struct ReluGrad {
  template <typename T>
  __device__ T operator()(T dy, T x) const {
    return x > T(0) ? dy : T(0);
  }
};

// ---------------------------------------------------------------------------
// Softmax cross-entropy.

/// *loss = the mean of row_loss over `rows`, rounded once to T, by one block
/// of kBlock threads: each thread adds the rows blockDim.x apart, then
/// block_reduce's tree. row_loss is read from L2 (other blocks of the same
/// kernel may have written it). Every thread of the block must call this.
template <typename T>
__device__ void write_mean_loss(const double* row_loss, T* loss, std::int64_t rows, double* red) {
  double s = 0.0;
  for (std::int64_t r = threadIdx.x; r < rows; r += blockDim.x) s += __ldcg(row_loss + r);
  s = block_reduce(s, red, false);
  if (threadIdx.x == 0) *loss = static_cast<T>(s / static_cast<double>(rows));
}

/// One block per row (striding over rows): probs and the row's loss
/// (max - x[label]) + log sum exp(x - max), or NaN for a bad label.
/// Fused (with `count`, a zero counter): the mean loss too, in the same
/// launch. Each block counts itself in once its rows' losses are written and
/// visible; the last one writes the mean as mean_loss_kernel does (the same
/// bits) and sets the counter back to zero.
template <typename T, bool Fused>
__global__ void softmax_rows_kernel(const T* logits, const std::int32_t* labels, T* probs,
                                    double* row_loss, std::int64_t rows, std::int64_t classes, T* loss,
                                    unsigned* count) {
  __shared__ double red[kBlock];
  __shared__ bool last;
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* x = logits + r * classes;
    T* p = probs + r * classes;
    double mx = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < classes; j += blockDim.x) mx = fmax(mx, static_cast<double>(x[j]));
    mx = block_reduce(mx, red, true);
    double s = 0.0;
    for (std::int64_t j = threadIdx.x; j < classes; j += blockDim.x) s += exp(static_cast<double>(x[j]) - mx);
    s = block_reduce(s, red, false);
    for (std::int64_t j = threadIdx.x; j < classes; j += blockDim.x)
      p[j] = static_cast<T>(exp(static_cast<double>(x[j]) - mx) / s);
    if (threadIdx.x == 0) {
      const std::int32_t label = labels[r];
      row_loss[r] = label >= 0 && label < classes ? (mx - static_cast<double>(x[label])) + log(s)
                                                  : quiet_nan<double>();
    }
  }
  if constexpr (Fused) {
    if (threadIdx.x == 0) {
      // Release: this block's row losses (thread 0 wrote them) are visible
      // before the count says so; acquire: the last block reads after it.
      cuda::atomic_ref<unsigned, cuda::thread_scope_device> done(*count);
      last = done.fetch_add(1u, cuda::memory_order_acq_rel) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {
      write_mean_loss(row_loss, loss, rows, red);
      if (threadIdx.x == 0) *count = 0;  // zero again for the next kernel
    }
  }
}

/// One block: the mean loss of softmax_rows_kernel's rows (write_mean_loss).
template <typename T>
__global__ void mean_loss_kernel(const double* row_loss, T* loss, std::int64_t rows) {
  __shared__ double red[kBlock];
  write_mean_loss(row_loss, loss, rows, red);
}

template <typename T>
__global__ void softmax_ce_backward_kernel(const T* probs, const std::int32_t* labels, T* dlogits,
                                           std::int64_t rows, std::int64_t classes) {
  const double n = static_cast<double>(rows);
  for (std::int64_t i = first_index(); i < rows * classes; i += grid_stride()) {
    const std::int64_t r = i / classes, j = i % classes;
    const std::int32_t label = labels[r];
    if (label < 0 || label >= classes) {
      dlogits[i] = quiet_nan<T>();
    } else {
      dlogits[i] = static_cast<T>(__ddiv_rn(__dsub_rn(static_cast<double>(probs[i]), j == label ? 1.0 : 0.0), n));
    }
  }
}

/// The loss's per-row terms: a block kept per stream by its worker
/// (scratch.cuh), and the counter its blocks count themselves in on.
thread_local StreamScratch t_loss_scratch;
thread_local StreamCounters t_loss_counts;
std::atomic<std::uint64_t> g_losses_in_one_launch{0};  // losses_in_one_launch()

// ---------------------------------------------------------------------------
// Argmax. Both kernels give what the CPU's scan in order gives: the first NaN
// if the line has one, else the first index of its largest value.

/// Strided lines (inner > 1, or short rows): a thread per line, scanning it
/// in order; neighbouring threads read neighbouring addresses when inner > 1.
template <typename T, typename I>
__global__ void argmax_kernel(const T* in, I* out, std::int64_t outer, std::int64_t len, std::int64_t inner) {
  for (std::int64_t i = first_index(); i < outer * inner; i += grid_stride()) {
    const std::int64_t o = i / inner, j = i % inner;
    const T* block = in + o * len * inner;
    T best = block[j];
    std::int64_t best_k = 0;
    for (std::int64_t k = 1; k < len; ++k) {
      const T v = block[k * inner + j];
      bool better = v > best;
      if constexpr (std::is_floating_point_v<T>) better = !isnan(best) && (better || isnan(v));
      if (better) {
        best = v;
        best_k = k;
      }
    }
    out[i] = static_cast<I>(best_k);
  }
}

/// A candidate for a row's argmax: a value and its index.
template <typename T>
struct Candidate {
  T v;
  std::int64_t k;
};

/// The winner of two candidates from disjoint parts of a line: a NaN before
/// any number (the earlier of two NaNs), else the larger value, else the
/// earlier index. Taken over any split of a line, in any order of pairing,
/// that is the scan's answer.
template <typename T>
__device__ __forceinline__ Candidate<T> better_of(Candidate<T> a, Candidate<T> b) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool an = isnan(a.v), bn = isnan(b.v);
    if (an || bn) return an && (!bn || a.k < b.k) ? a : b;
  }
  if (a.v != b.v) return a.v > b.v ? a : b;
  return a.k < b.k ? a : b;
}

// Rows at least this long get a block each (argmax_rows_kernel).
constexpr std::int64_t kArgmaxRowMin = 64;

/// The candidate every element of a line beats or ties with an earlier
/// index: the least value (-inf for floats, so that a line of -inf still
/// has its first index) at index INT64_MAX.
template <typename T>
__device__ __forceinline__ Candidate<T> no_candidate() {
  if constexpr (std::is_floating_point_v<T>) return {-std::numeric_limits<T>::infinity(), INT64_MAX};
  else return {std::numeric_limits<T>::lowest(), INT64_MAX};
}

/// The better of the candidates of this lane and the lanes `off`, 2 `off`,
/// ... above it, down to lane 0 of the warp: a tree of shuffles.
template <typename T>
__device__ __forceinline__ Candidate<T> warp_best(Candidate<T> c) {
  for (unsigned off = 16; off > 0; off /= 2)
    c = better_of(c, Candidate<T>{__shfl_down_sync(0xffffffffu, c.v, off), __shfl_down_sync(0xffffffffu, c.k, off)});
  return c;
}

/// Contiguous rows (inner == 1): a block per row. Each thread takes 16-byte
/// packs of the row's 16-byte-aligned middle, four loads in flight before
/// any compare, and the few elements before and after it singly, keeping
/// one candidate; then shuffles within each warp, and the warps' candidates
/// by the first warp. better_of gives the scan's answer over any split and
/// any pairing, so the order of all this does not matter. (A thread per
/// element strided over the row with scalar loads and a shared-memory tree
/// of 8 rounds read a 4096 x 4096 f32 matrix at half the speed of a row
/// sum.) Launched with kBlock threads.
template <typename T, typename I>
__global__ void __launch_bounds__(kBlock) argmax_rows_kernel(const T* in, I* out, std::int64_t rows, std::int64_t len) {
  using P = Pack16<T>;
  constexpr int W = P::kWidth;
  constexpr int kWarps = kBlock / 32;
  __shared__ T warp_v[kWarps];
  __shared__ std::int64_t warp_k[kWarps];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* p = in + row * len;
    // [a, b): the packs' part of the row.
    const auto addr = reinterpret_cast<std::uintptr_t>(p);
    const auto skew = static_cast<std::int64_t>((16 - addr % 16) % 16);
    std::int64_t a = 0, b = 0;
    if (skew % static_cast<std::int64_t>(sizeof(T)) == 0) {
      a = std::min(len, skew / static_cast<std::int64_t>(sizeof(T)));
      b = a + (len - a) / W * W;
    }
    Candidate<T> c = no_candidate<T>();
    const P* packs = reinterpret_cast<const P*>(p + a);
    const std::int64_t npacks = (b - a) / W;
    std::int64_t i = threadIdx.x;
    for (; i + 3 * kBlock < npacks; i += 4 * kBlock) {
      P x[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) x[u] = packs[i + u * kBlock];
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int j = 0; j < W; ++j) c = better_of(c, Candidate<T>{x[u].v[j], a + (i + u * kBlock) * W + j});
    }
    for (; i < npacks; i += kBlock) {
      const P x = packs[i];
#pragma unroll
      for (int j = 0; j < W; ++j) c = better_of(c, Candidate<T>{x.v[j], a + i * W + j});
    }
    for (std::int64_t k = threadIdx.x; k < a; k += kBlock) c = better_of(c, Candidate<T>{p[k], k});
    for (std::int64_t k = b + threadIdx.x; k < len; k += kBlock) c = better_of(c, Candidate<T>{p[k], k});
    c = warp_best(c);
    if (lane == 0) {
      warp_v[warp] = c.v;
      warp_k[warp] = c.k;
    }
    __syncthreads();
    if (warp == 0) {
      c = lane < kWarps ? Candidate<T>{warp_v[lane], warp_k[lane]} : no_candidate<T>();
      c = warp_best(c);
      if (lane == 0) out[row] = static_cast<I>(c.k);
    }
    __syncthreads();  // the next row refills warp_v and warp_k only after the first warp has read them
  }
}

}  // namespace

void add_row_bias(void* stream, DType dtype, void* y, const void* b, std::int64_t rows,
                  std::int64_t cols) {
  const std::int64_t n = rows * cols;
  if (n == 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto* out = static_cast<T*>(y);
    const auto* bias = static_cast<const T*>(b);
    // By packs, in place, when a row is a whole number of them and both are
    // aligned (map_kernels.cuh): y walks [rows, cols], b a row of cols.
    kernels::BroadcastMap m;
    m.ndim = 2;
    m.extent[0] = rows;
    m.extent[1] = cols;
    m.a_walks = 0b11;
    m.b_walks = 0b10;
    if (launch_broadcast_packs<T>(out, bias, out, m, AddBias{}, stream)) return;
    if (n <= kMax32) {  // grid_util.cuh
      add_row_bias_kernel<T, std::int32_t><<<blocks_for(n), kBlock, 0, s>>>(
          out, bias, static_cast<std::int32_t>(n), static_cast<std::int32_t>(cols));
    } else {
      add_row_bias_kernel<T, std::int64_t><<<blocks_for(n), kBlock, 0, s>>>(out, bias, n, cols);
    }
    TIDE_CUDA_LAUNCH_CHECK();
  });
}

// The bias gradient is a sum over axis 0: the reduction kernels' strided
// path (reduction_kernels.cu) splits the rows into chunks so that the whole
// GPU reads at once, where a thread per column kept a few SMs busy (a
// 4096 x 4096 gradient gave 16 blocks). It adds in double, as before.
void column_sums(void* stream, DType dtype, const void* in, void* out, std::int64_t rows,
                 std::int64_t cols) {
  launch_reduce(kernels::ReduceOp::sum, dtype, in, out, 1, rows, cols, stream);
}

void relu_backward(void* stream, DType dtype, const void* dy, const void* x, void* dx, std::int64_t n) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_map<T>(dx, n, ReluGrad{}, stream, static_cast<const T*>(dy), static_cast<const T*>(x));
  });
}

std::uint64_t losses_in_one_launch() { return g_losses_in_one_launch.load(std::memory_order_relaxed); }

void softmax_cross_entropy(void* stream, DType dtype, const void* logits,
                           const std::int32_t* labels, void* loss, void* probs, std::int64_t rows,
                           std::int64_t classes) {
  // rows >= 1 and classes >= 1: checked on the frontend.
  const auto s = static_cast<cudaStream_t>(stream);
  OpScratch row_loss(t_loss_scratch, static_cast<std::size_t>(rows) * sizeof(double), s);
  // Launched by a stream's worker: the mean in the same launch (the last
  // block's), else a second kernel.
  unsigned* count = one_launch_reductions() ? t_loss_counts.get(1, s) : nullptr;
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    const unsigned grid = static_cast<unsigned>(std::min<std::int64_t>(rows, kMaxBlocks));
    auto* terms = static_cast<double*>(row_loss.get());
    if (count) {
      softmax_rows_kernel<T, true><<<grid, kBlock, 0, s>>>(static_cast<const T*>(logits), labels,
                                                           static_cast<T*>(probs), terms, rows, classes,
                                                           static_cast<T*>(loss), count);
      TIDE_CUDA_LAUNCH_CHECK();
      g_losses_in_one_launch.fetch_add(1, std::memory_order_relaxed);
    } else {
      softmax_rows_kernel<T, false><<<grid, kBlock, 0, s>>>(static_cast<const T*>(logits), labels,
                                                            static_cast<T*>(probs), terms, rows, classes,
                                                            nullptr, nullptr);
      TIDE_CUDA_LAUNCH_CHECK();
      mean_loss_kernel<<<1, kBlock, 0, s>>>(terms, static_cast<T*>(loss), rows);
      TIDE_CUDA_LAUNCH_CHECK();
    }
  });
  row_loss.release();
}

void softmax_cross_entropy_backward(void* stream, DType dtype, const void* probs,
                                    const std::int32_t* labels, void* dlogits, std::int64_t rows,
                                    std::int64_t classes) {
  const std::int64_t n = rows * classes;
  if (n == 0) return;
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    softmax_ce_backward_kernel<<<blocks_for(n), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const T*>(probs), labels, static_cast<T*>(dlogits), rows, classes);
    TIDE_CUDA_LAUNCH_CHECK();
  });
}

void argmax(void* stream, DType dtype, const void* in, DType index, void* out, std::int64_t outer,
            std::int64_t len, std::int64_t inner) {
  const std::int64_t n = outer * inner;
  if (n == 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto s = static_cast<cudaStream_t>(stream);
    const auto* x = static_cast<const T*>(in);
    auto launch = [&](auto* o) {
      if (inner == 1 && len >= kArgmaxRowMin)
        argmax_rows_kernel<<<static_cast<unsigned>(std::min(outer, kMaxBlocks)), kBlock, 0, s>>>(x, o, outer, len);
      else
        argmax_kernel<<<blocks_for(n), kBlock, 0, s>>>(x, o, outer, len, inner);
    };
    if (index == DType::i32) launch(static_cast<std::int32_t*>(out));
    else launch(static_cast<std::int64_t*>(out));
    TIDE_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace tide::cuda_kernels
