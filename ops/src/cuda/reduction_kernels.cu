// CUDA reductions over [outer, len, inner], in two deterministic passes.
//
// The reduced axis is cut into `chunks` chunks of `chunk_len` elements, a
// function of the shape only. Pass 1 reduces each (output, chunk) to one
// partial: for contiguous rows (inner == 1, long rows) a block per chunk,
// its threads striding over the chunk in 16-byte loads and then a tree of
// warp shuffles; for strided columns a thread per (output, chunk) walking
// its chunk in order, which keeps neighbouring threads on neighbouring
// addresses (a thread per four or two side-by-side outputs, in 16-byte
// loads, when the rows allow). Pass 2 (only when chunks > 1) adds each
// output's partials: in chunk order by a thread, or, for an output of many
// chunks, by a block (side-by-side chunks) or 8 threads (chunks a row of
// outputs apart), in a fixed tree.
//
// Where it can, one launch does both passes, with the same bits: columns of
// at most 8 chunks in blocks that hold each output's chunks
// (cols_fused_kernel); rows, when a stream's worker launches them and the
// grid is about one wave, by each row's last block to finish (rows_kernel's
// counters, kept at zero between kernels). The only atomics count blocks in; nothing depends on the grid
// size or on which block comes last, so reruns give identical bits.
#include "reduction_kernels.h"

#include <cuda/atomic>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <tide/core/assert.h>
#include <tide/core/cuda_check.h>
#include <tide/core/error.h>

#include "../reduce_functors.h"
#include "grid_util.cuh"
#include "partials.cuh"
#include "scratch.cuh"

namespace tide::cuda_kernels {

namespace {

enum class Mode { sum, mean, max, min };

using functors::MaxOp;
using functors::MinOp;
using functors::SumOp;

template <typename T, Mode M>
using OpOf = std::conditional_t<M == Mode::max, MaxOp<T>, std::conditional_t<M == Mode::min, MinOp<T>, SumOp<T>>>;
template <typename T, Mode M>
using AccOf = typename OpOf<T, M>::Acc;

/// The output value from an output's total, as the CPU converts it.
template <typename T, Mode M>
__device__ T finish(AccOf<T, M> acc, std::int64_t len) {
  return functors::finish<T>(acc, len, M == Mode::mean);
}

// Pass 2 gives an output a block (inner == 1), or 8 threads (inner > 1),
// rather than a thread from this many chunks.
constexpr std::int64_t kBlockFinalizeChunks = 64;
constexpr std::int64_t kColsFinalizeChunks = 16;

/// Pass 1 on contiguous rows: one block per (row, chunk) task. Writes the
/// finished value when there is a single chunk (partial == nullptr).
/// Fused (with `counts`, a counter per row, zero): pass 2 is done here too.
/// Each block counts itself in after its partial is written and visible,
/// and the row's last block combines the row's partials as pass 2 would
/// (combine_by_block from kBlockFinalizeChunks chunks, else in chunk order
/// by one thread, the partials staged in shared memory by the others: the
/// same bits), writes the output and sets the counter back to zero. A
/// template parameter, so that the kernel without it keeps its registers.
///
/// Each thread reads 16-byte packs (the 16-byte-aligned middle of its
/// chunk; the few elements before and after it singly) into one accumulator
/// per lane of the pack, so that several loads and adds are in flight; the
/// block then combines in block_combine's tree. The order depends on the
/// shape and the data's alignment only, so reruns give identical bits (a
/// view that starts off a 16-byte boundary may differ from a contiguous
/// copy of it in the last bits of a float sum). Launched with kThreads
/// threads, which block_combine assumes.
template <typename T, Mode M, bool Fused>
__global__ void __launch_bounds__(kThreads) rows_kernel(const T* in, AccOf<T, M>* partial, T* out, std::int64_t outer,
                            std::int64_t len, std::int64_t chunks, std::int64_t chunk_len, unsigned* counts) {
  using Op = OpOf<T, M>;
  using Acc = AccOf<T, M>;
  using P = Pack16<T>;
  constexpr int W = P::kWidth;
  __shared__ Acc warps[kThreads / kWarp];
  __shared__ bool last;
  __shared__ Acc staged[Fused ? kBlockFinalizeChunks : 1];
  const std::int64_t tasks = outer * chunks;
  for (std::int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const std::int64_t row = task / chunks, c = task % chunks;
    const std::int64_t begin = c * chunk_len, end = std::min(len, begin + chunk_len);
    const T* p = in + row * len;
    // [a, b): the packs' part of [begin, end).
    const auto addr = reinterpret_cast<std::uintptr_t>(p + begin);
    const std::int64_t skew = static_cast<std::int64_t>((16 - addr % 16) % 16);
    std::int64_t a = begin, b = begin;
    if (skew % static_cast<std::int64_t>(sizeof(T)) == 0) {
      a = std::min(end, begin + skew / static_cast<std::int64_t>(sizeof(T)));
      b = a + (end - a) / W * W;
    }
    Acc lanes[W];
#pragma unroll
    for (int j = 0; j < W; ++j) lanes[j] = Op::identity();
    const P* packs = reinterpret_cast<const P*>(p + a);
    const std::int64_t npacks = (b - a) / W;
    // Four packs loaded before any is added, so that four loads are in
    // flight (a loop the compiler unrolls still checks its bound before each
    // load); the adds keep index order.
    std::int64_t i = threadIdx.x;
    for (; i + 3 * kThreads < npacks; i += 4 * kThreads) {
      P x[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) x[u] = packs[i + u * kThreads];
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int j = 0; j < W; ++j) lanes[j] = Op::combine(lanes[j], static_cast<Acc>(x[u].v[j]));
    }
    for (; i < npacks; i += kThreads) {
      const P x = packs[i];
#pragma unroll
      for (int j = 0; j < W; ++j) lanes[j] = Op::combine(lanes[j], static_cast<Acc>(x.v[j]));
    }
    Acc acc = lanes[0];
#pragma unroll
    for (int j = 1; j < W; ++j) acc = Op::combine(acc, lanes[j]);
    // The unaligned head [begin, a) and the tail [b, end): fewer than 2 W
    // elements unless the rows are not even aligned to T.
    for (std::int64_t k = begin + threadIdx.x; k < a; k += kThreads) acc = Op::combine(acc, static_cast<Acc>(p[k]));
    for (std::int64_t k = b + threadIdx.x; k < end; k += kThreads) acc = Op::combine(acc, static_cast<Acc>(p[k]));
    acc = block_combine<Op>(acc, warps);
    if (threadIdx.x == 0) {
      if (partial) partial[task] = acc;
      else out[row] = finish<T, M>(acc, len);
      if constexpr (Fused) {
        // Release: the partial is visible to every block before the count
        // says so; acquire: the last block's loads come after its count.
        cuda::atomic_ref<unsigned, cuda::thread_scope_device> count(counts[row]);
        last = count.fetch_add(1u, cuda::memory_order_acq_rel) == static_cast<unsigned>(chunks - 1);
      }
    }
    // warps (and last) are refilled for the next task only after they are read.
    __syncthreads();
    if constexpr (Fused) {
      if (last) {
        const Acc* q = partial + row * chunks;
        if (chunks >= kBlockFinalizeChunks) {
          const Acc r = combine_by_block<Op>(q, chunks, warps);
          if (threadIdx.x == 0) out[row] = finish<T, M>(r, len);
        } else {
          // Fewer partials than threads: one load each, then the sum in
          // chunk order (combine_in_order's, from the identity).
          if (threadIdx.x < chunks) staged[threadIdx.x] = load_partial(q + threadIdx.x);
          __syncthreads();
          if (threadIdx.x == 0) {
            Acc r = Op::identity();
            for (std::int64_t c = 0; c < chunks; ++c) r = Op::combine(r, staged[c]);
            out[row] = finish<T, M>(r, len);
          }
        }
        if (threadIdx.x == 0) counts[row] = 0;  // zero again for the next kernel
        __syncthreads();
      }
    }
  }
}

/// One column's rows [begin, end) combined into `acc` in row order, `p`
/// pointing at its element of row 0 and rows `inner` elements apart.
/// Unrolled so that several loads are in flight; the adds keep the order.
template <typename Op, typename T>
__device__ __forceinline__ void walk_column(typename Op::Acc& acc, const T* p, std::int64_t inner, std::int64_t begin,
                                            std::int64_t end) {
  using Acc = typename Op::Acc;
#pragma unroll 4
  for (std::int64_t k = begin; k < end; ++k) acc = Op::combine(acc, static_cast<Acc>(p[k * inner]));
}

/// The same for a pack of W side-by-side columns, one accumulator each,
/// rows `stride` packs apart: eight rows' packs (128 bytes) are loaded
/// before any is added, and the adds keep row order.
template <typename Op, typename T>
__device__ __forceinline__ void walk_packed_columns(typename Op::Acc (&acc)[Pack16<T>::kWidth], const Pack16<T>* p,
                                                    std::int64_t stride, std::int64_t begin, std::int64_t end) {
  using Acc = typename Op::Acc;
  using P = Pack16<T>;
  constexpr int W = P::kWidth;
  std::int64_t k = begin;
  for (; k + 8 <= end; k += 8) {
    P x[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) x[u] = p[(k + u) * stride];
#pragma unroll
    for (int u = 0; u < 8; ++u)
#pragma unroll
      for (int l = 0; l < W; ++l) acc[l] = Op::combine(acc[l], static_cast<Acc>(x[u].v[l]));
  }
  for (; k < end; ++k) {
    const P x = p[k * stride];
#pragma unroll
    for (int l = 0; l < W; ++l) acc[l] = Op::combine(acc[l], static_cast<Acc>(x.v[l]));
  }
}

/// Pass 1 on strided columns: one thread per (outer, chunk, inner) in that
/// layout, summing its chunk in index order.
template <typename T, Mode M>
__global__ void cols_kernel(const T* in, AccOf<T, M>* partial, T* out, std::int64_t outer,
                            std::int64_t len, std::int64_t inner, std::int64_t chunks,
                            std::int64_t chunk_len) {
  using Op = OpOf<T, M>;
  using Acc = AccOf<T, M>;
  const std::int64_t total = outer * chunks * inner;
  for (std::int64_t idx = first_index(); idx < total; idx += grid_stride()) {
    const std::int64_t j = idx % inner, t = idx / inner;
    const std::int64_t c = t % chunks, o = t / chunks;
    const std::int64_t begin = c * chunk_len, end = std::min(len, begin + chunk_len);
    Acc acc = Op::identity();
    walk_column<Op>(acc, in + o * len * inner + j, inner, begin, end);
    if (partial) partial[idx] = acc;
    else out[o * inner + j] = finish<T, M>(acc, len);
  }
}

/// Pass 1 on strided columns whose rows are whole 16-byte packs (inner a
/// multiple of the pack's width, the data 16-byte aligned): one thread per
/// (outer, chunk, pack of inner), walking its chunk in order with a
/// 16-byte load per row, one accumulator per column. Each column's sum is in
/// the same order as cols_kernel's, with four (or two) times the bytes per
/// load in flight; the partials go where cols_kernel puts them.
template <typename T, Mode M>
__global__ void cols_packed_kernel(const T* in, AccOf<T, M>* partial, T* out, std::int64_t outer,
                                   std::int64_t len, std::int64_t inner, std::int64_t chunks,
                                   std::int64_t chunk_len) {
  using Op = OpOf<T, M>;
  using Acc = AccOf<T, M>;
  constexpr int W = Pack16<T>::kWidth;
  const std::int64_t inner_packs = inner / W;
  const std::int64_t total = outer * chunks * inner_packs;
  for (std::int64_t idx = first_index(); idx < total; idx += grid_stride()) {
    const std::int64_t jp = idx % inner_packs, t = idx / inner_packs;
    const std::int64_t c = t % chunks, o = t / chunks;
    const std::int64_t begin = c * chunk_len, end = std::min(len, begin + chunk_len);
    Acc acc[W];
#pragma unroll
    for (int l = 0; l < W; ++l) acc[l] = Op::identity();
    walk_packed_columns<Op>(acc, reinterpret_cast<const Pack16<T>*>(in + o * len * inner) + jp, inner_packs, begin,
                            end);
    const std::int64_t j = jp * W;
#pragma unroll
    for (int l = 0; l < W; ++l) {
      if (partial) partial[(o * chunks + c) * inner + j + l] = acc[l];
      else out[o * inner + j + l] = finish<T, M>(acc[l], len);
    }
  }
}

// Pass 2's blocks for partials a row of outputs apart (finalize_cols_kernel),
// and the fused kernel's: kColsX side-by-side outputs (or packs) in x, and
// kColsY threads per output in y.
constexpr unsigned kColsX = 32, kColsY = kThreads / kColsX;

/// Strided columns in at most kColsY chunks, both passes in one launch: a
/// block holds kColsX side-by-side units (an output, or a pack of W outputs
/// when Packed) in x and their chunks in y (blockDim.x is kColsX x the
/// chunk count, so no row of threads is idle). Each thread reduces its chunk of its unit
/// in row order, as cols_kernel and cols_packed_kernel do; then the block's
/// first row combines the chunks' results in chunk order from the identity,
/// as finalize_kernel does, and writes the outputs. The same bits as the two
/// passes, without the second launch and the partials: what a small column
/// sum (a bias gradient at a batch of 64) costs is its launches.
template <typename T, Mode M, bool Packed>
__global__ void cols_fused_kernel(const T* in, T* out, std::int64_t outer, std::int64_t len, std::int64_t inner,
                                  std::int64_t chunk_len) {
  using Op = OpOf<T, M>;
  using Acc = AccOf<T, M>;
  using P = Pack16<T>;
  constexpr int W = Packed ? P::kWidth : 1;
  __shared__ Acc part[kColsY][W][kColsX];
  const unsigned x = threadIdx.x % kColsX, y = threadIdx.x / kColsX;
  const std::int64_t chunks = blockDim.x / kColsX;  // a row of threads per chunk
  const std::int64_t per_outer = inner / W;  // units of each outer index
  const std::int64_t units = outer * per_outer;
  for (std::int64_t base = std::int64_t{blockIdx.x} * kColsX; base < units;
       base += std::int64_t{gridDim.x} * kColsX) {
    const std::int64_t idx = base + x;
    Acc acc[W];
#pragma unroll
    for (int l = 0; l < W; ++l) acc[l] = Op::identity();
    if (idx < units) {
      const std::int64_t o = idx / per_outer, ju = idx % per_outer;
      const std::int64_t begin = static_cast<std::int64_t>(y) * chunk_len, end = std::min(len, begin + chunk_len);
      // As the pass-1 kernels walk a chunk.
      if constexpr (Packed)
        walk_packed_columns<Op>(acc, reinterpret_cast<const P*>(in + o * len * inner) + ju, per_outer, begin, end);
      else
        walk_column<Op>(acc[0], in + o * len * inner + ju, inner, begin, end);
    }
#pragma unroll
    for (int l = 0; l < W; ++l) part[y][l][x] = acc[l];
    __syncthreads();
    if (y == 0 && idx < units) {
      const std::int64_t o = idx / per_outer, j = (idx % per_outer) * W;
#pragma unroll
      for (int l = 0; l < W; ++l) {
        Acc r = Op::identity();
        for (std::int64_t c = 0; c < chunks; ++c) r = Op::combine(r, part[c][l][x]);
        out[o * inner + j + l] = finish<T, M>(r, len);
      }
    }
    __syncthreads();  // part is refilled for the next units only after the first row has read it
  }
}

/// Pass 2: each output combines its chunks' partials in chunk order.
template <typename T, Mode M>
__global__ void finalize_kernel(const AccOf<T, M>* partial, T* out, std::int64_t outer,
                                std::int64_t chunks, std::int64_t inner, std::int64_t len) {
  using Op = OpOf<T, M>;
  for (std::int64_t idx = first_index(); idx < outer * inner; idx += grid_stride()) {
    const std::int64_t o = idx / inner, j = idx % inner;
    out[idx] = finish<T, M>(combine_in_order<Op>(partial + o * chunks * inner + j, chunks, inner), len);
  }
}

/// Pass 2 for outputs of many chunks whose partials lie side by side
/// (inner == 1): a block per output (combine_by_block, the same tree as
/// rows_kernel). One thread adding a thousand partials in turn took most of
/// a whole-tensor sum.
template <typename T, Mode M>
__global__ void __launch_bounds__(kThreads)
    finalize_rows_kernel(const AccOf<T, M>* partial, T* out, std::int64_t outputs, std::int64_t chunks,
                         std::int64_t len) {
  using Op = OpOf<T, M>;
  using Acc = AccOf<T, M>;
  __shared__ Acc warps[kThreads / kWarp];
  for (std::int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    const Acc acc = combine_by_block<Op>(partial + o * chunks, chunks, warps);
    if (threadIdx.x == 0) out[o] = finish<T, M>(acc, len);
    __syncthreads();  // warps is refilled for the next output only after the first warp has read it
  }
}

/// Pass 2 for outputs of many chunks whose partials lie a row of outputs
/// apart (inner > 1, from the column kernels): a block per 32 side-by-side
/// outputs, so that each load of a partial is one 128-byte line across a
/// warp, and 8 threads per output. Thread y of an output combines chunks
/// y, y + 8, y + 16, ... in order, then the first combines the 8 results in
/// order: a fixed tree whatever the grid. A thread per output took 4,096
/// threads to read a 4096 x 4096 column sum's 2 MB of partials.
template <typename T, Mode M>
__global__ void __launch_bounds__(kThreads) finalize_cols_kernel(const AccOf<T, M>* partial, T* out, std::int64_t outer,
                                     std::int64_t chunks, std::int64_t inner, std::int64_t len) {
  using Op = OpOf<T, M>;
  using Acc = AccOf<T, M>;
  __shared__ Acc part[kColsY][kColsX];
  const unsigned x = threadIdx.x % kColsX, y = threadIdx.x / kColsX;
  const std::int64_t outputs = outer * inner;
  for (std::int64_t base = std::int64_t{blockIdx.x} * kColsX; base < outputs;
       base += std::int64_t{gridDim.x} * kColsX) {
    const std::int64_t idx = base + x;
    Acc acc = Op::identity();
    if (idx < outputs) {
      const std::int64_t o = idx / inner, j = idx % inner;
      const Acc* q = partial + o * chunks * inner + j;
      // Four partials loaded before any is added; the adds keep the order.
      std::int64_t c = y;
      for (; c + 3 * kColsY < chunks; c += 4 * kColsY) {
        Acc v[4];
#pragma unroll
        for (unsigned u = 0; u < 4; ++u) v[u] = q[(c + u * kColsY) * inner];
#pragma unroll
        for (unsigned u = 0; u < 4; ++u) acc = Op::combine(acc, v[u]);
      }
      for (; c < chunks; c += kColsY) acc = Op::combine(acc, q[c * inner]);
    }
    part[y][x] = acc;
    __syncthreads();
    if (y == 0 && idx < outputs) {
      Acc r = part[0][x];
      for (unsigned k = 1; k < kColsY; ++k) r = Op::combine(r, part[k][x]);
      out[idx] = finish<T, M>(r, len);
    }
    __syncthreads();  // part is refilled for the next outputs only after the first row has read it
  }
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Rows at least this long get a block per chunk; shorter ones a thread.
constexpr std::int64_t kRowMin = 256;
// Elements per chunk of a row: 16 per thread of a block.
constexpr std::int64_t kRowChunk = 16 * kThreads;
// Columns are split until about this many threads have work (about what
// an H100 or H200 keeps resident: 132 SMs x 2048)...
constexpr std::int64_t kColThreads = std::int64_t{1} << 18;
// ...but no chunk is shorter than this.
constexpr std::int64_t kColMinChunk = 32;
// Bounds pass 2's work per output (a thread's loop, or a block's) and the scratch size.
constexpr std::int64_t kMaxChunks = 1024;
// Rows may be cut finer: a row's chunks are added by a block. A whole
// 4096 x 4096 tensor's sum in 1,024 chunks of 16,384 elements left its
// blocks too long for the last wave to fill the GPU (41 us, where the same
// bytes as 4,096 rows of 4,096 took 24 us); in chunks of kRowChunk it is
// pass 1 of a row sum.
constexpr std::int64_t kMaxRowChunks = 4096;
// Rows in several chunks run in one launch only up to this many blocks'
// tasks, about one wave of an H100 or H200 (132 SMs x 8 blocks): each block
// waits on its count's fence and atomic before it retires, which costs more
// than the second launch saves once the grid runs in waves. A whole
// 4096 x 4096 sum (4,096 tasks) took 30 us in one launch and 26 us in two on
// an H200; the trainer's and the tests' rows stay below it.
constexpr std::int64_t kMaxFusedRowTasks = 1024;

thread_local StreamScratch t_scratch;
thread_local StreamCounters t_counts;
std::atomic<std::uint64_t> g_rows_in_one_launch{0};  // rows_reduced_in_one_launch()

template <typename T, Mode M>
void reduce_t(const T* in, T* out, std::int64_t outer, std::int64_t len, std::int64_t inner,
              cudaStream_t stream) {
  using Acc = AccOf<T, M>;
  const std::int64_t outputs = outer * inner;
  if (outputs == 0) return;
  const bool rows = inner == 1 && len >= kRowMin;
  constexpr std::int64_t W = Pack16<T>::kWidth;
  const bool packed = !rows && inner % W == 0 && reinterpret_cast<std::uintptr_t>(in) % 16 == 0;
  // Columns: a thread per (chunk, output), or per (chunk, pack of W
  // outputs), until about kColThreads threads have work.
  const std::int64_t col_threads_per_chunk = packed ? outputs / W : outputs;
  std::int64_t chunks = rows ? ceil_div(len, kRowChunk)
                             : std::min(ceil_div(kColThreads, col_threads_per_chunk), ceil_div(len, kColMinChunk));
  chunks = std::clamp<std::int64_t>(chunks, 1, rows ? kMaxRowChunks : kMaxChunks);
  const std::int64_t chunk_len = ceil_div(len, chunks);  // 0 when len == 0: empty sums
  if (chunk_len > 0) chunks = ceil_div(len, chunk_len);  // so no chunk is empty

  if (!rows && chunks > 1 && chunks <= static_cast<std::int64_t>(kColsY) && one_launch_reductions()) {
    // Few chunks: both passes in one launch, no partials.
    const std::int64_t units = packed ? outputs / W : outputs;
    const auto blocks = static_cast<unsigned>(std::min(ceil_div(units, kColsX), kMaxBlocks));
    const auto threads = static_cast<unsigned>(kColsX * chunks);
    if (packed)
      cols_fused_kernel<T, M, true><<<blocks, threads, 0, stream>>>(in, out, outer, len, inner, chunk_len);
    else
      cols_fused_kernel<T, M, false><<<blocks, threads, 0, stream>>>(in, out, outer, len, inner, chunk_len);
    TIDE_CUDA_LAUNCH_CHECK();
    return;
  }
  // The partials: this worker's block for the stream, or, when larger (or
  // on the frontend, launching on an idle stream, which would keep blocks of
  // streams long destroyed, whose handles a later stream may reuse), one
  // allocated and freed in stream order.
  std::optional<OpScratch> scratch;
  Acc* partial = nullptr;
  if (chunks > 1) {
    scratch.emplace(t_scratch, static_cast<std::size_t>(outputs * chunks) * sizeof(Acc), stream);
    partial = static_cast<Acc*>(scratch->get());
  }
  // Rows in several chunks, launched by a stream's worker: pass 2 in the
  // same launch, by each row's last block (rows_kernel's counts).
  unsigned* counts = rows && chunks > 1 && outer * chunks <= kMaxFusedRowTasks && one_launch_reductions()
                         ? t_counts.get(static_cast<std::size_t>(outer), stream)
                         : nullptr;
  if (rows) {
    const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(outer * chunks, 1 << 16));
    if (counts) {
      rows_kernel<T, M, true><<<blocks, kThreads, 0, stream>>>(in, partial, out, outer, len, chunks, chunk_len, counts);
      g_rows_in_one_launch.fetch_add(1, std::memory_order_relaxed);
    } else
      rows_kernel<T, M, false><<<blocks, kThreads, 0, stream>>>(in, partial, out, outer, len, chunks, chunk_len,
                                                                nullptr);
  } else if (packed) {
    cols_packed_kernel<T, M><<<grid_for(outputs / W * chunks), kThreads, 0, stream>>>(
        in, partial, out, outer, len, inner, chunks, chunk_len);
  } else {
    cols_kernel<T, M><<<grid_for(outputs * chunks), kThreads, 0, stream>>>(
        in, partial, out, outer, len, inner, chunks, chunk_len);
  }
  TIDE_CUDA_LAUNCH_CHECK();
  if (chunks > 1 && !counts) {
    if (inner == 1 && chunks >= kBlockFinalizeChunks)
      finalize_rows_kernel<T, M><<<static_cast<unsigned>(std::min(outputs, kMaxBlocks)), kThreads, 0, stream>>>(
          partial, out, outputs, chunks, len);
    else if (inner > 1 && chunks >= kColsFinalizeChunks)
      finalize_cols_kernel<T, M>
          <<<static_cast<unsigned>(std::min(ceil_div(outputs, kColsX), kMaxBlocks)), kThreads, 0, stream>>>(
              partial, out, outer, chunks, inner, len);
    else
      finalize_kernel<T, M><<<grid_for(outputs), kThreads, 0, stream>>>(partial, out, outer, chunks,
                                                                        inner, len);
    TIDE_CUDA_LAUNCH_CHECK();
  }
  if (scratch) scratch->release();
}

template <typename T>
void reduce_dtype(kernels::ReduceOp op, const void* in, void* out, std::int64_t outer, std::int64_t len,
                  std::int64_t inner, cudaStream_t s) {
  const auto* ti = static_cast<const T*>(in);
  auto* to = static_cast<T*>(out);
  switch (op) {
    case kernels::ReduceOp::sum: return reduce_t<T, Mode::sum>(ti, to, outer, len, inner, s);
    case kernels::ReduceOp::max:
      if (len == 0) throw ValueError("max: no elements to reduce");
      return reduce_t<T, Mode::max>(ti, to, outer, len, inner, s);
    case kernels::ReduceOp::min:
      if (len == 0) throw ValueError("min: no elements to reduce");
      return reduce_t<T, Mode::min>(ti, to, outer, len, inner, s);
    case kernels::ReduceOp::mean:
      if constexpr (std::is_floating_point_v<T>) return reduce_t<T, Mode::mean>(ti, to, outer, len, inner, s);
      else throw DTypeError("mean: needs a floating dtype (f32 or f64)");
  }
  TIDE_UNREACHABLE("launch_reduce: a ReduceOp this switch does not name");
}

}  // namespace

std::uint64_t rows_reduced_in_one_launch() { return g_rows_in_one_launch.load(std::memory_order_relaxed); }

bool one_launch_reductions() {
  // A throw leaves the static unset: the next call reads it again.
  static const bool on = [] {
    const char* v = std::getenv("TIDE_CUDA_ONE_LAUNCH");
    if (v == nullptr || std::string_view(v).empty() || std::string_view(v) == "1") return true;
    if (std::string_view(v) == "0") return false;
    throw ValueError(std::string("TIDE_CUDA_ONE_LAUNCH=") + v + ": expected 0 or 1");
  }();
  return on;
}

void launch_reduce(kernels::ReduceOp op, DType dtype, const void* in, void* out, std::int64_t outer,
                   std::int64_t len, std::int64_t inner, void* stream) {
  dispatch_dtype(dtype, [&](auto tag) {
    reduce_dtype<decltype(tag)>(op, in, out, outer, len, inner, as_stream(stream));
  });
}

}  // namespace tide::cuda_kernels
