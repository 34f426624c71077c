// Matrix products on CUDA devices (see blas.h): cuBLAS for f32 and f64, a
// tiled kernel for i32, and the cuBLAS handles, one per backend stream.
#include "blas.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <tide/core/cuda_check.h>
#include <tide/core/device.h>

#include "cublas_check.h"

namespace tide::cuda_kernels {

namespace {

// cuBLAS's recommended workspace for Hopper (4 MiB for older GPUs). Being
// ours, it is allocated once per handle, at its creation, and never inside
// an op's gemm.
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

/// One cuBLAS handle bound to one stream, with that stream's workspace: two
/// streams never share a workspace, since their gemms may run at once.
struct StreamBlas {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t handle = nullptr;
  void* workspace = nullptr;

  StreamBlas() = default;
  StreamBlas(const StreamBlas&) = delete;
  StreamBlas& operator=(const StreamBlas&) = delete;

  ~StreamBlas() {
    // Runs at the exit of the thread that made it. When that is the process's
    // exit the runtime may already be unloading: then cudaSetDevice fails and
    // the driver reclaims everything, so nothing is released here.
    if (cudaSetDevice(device) != cudaSuccess) return;
    // cublasDestroy waits for the device, so no gemm still uses the workspace.
    if (handle) cublasDestroy(handle);
    if (workspace) cudaFree(workspace);
  }
};

/// The handles of the calling thread. A backend stream has exactly one
/// worker thread, so a handle is only ever used by the thread that owns it
/// (cuBLAS handles are not to be shared between threads that use them at
/// once). A thread serves few streams: a linear search is enough.
class ThreadBlas {
 public:
  cublasHandle_t handle(int device, cudaStream_t stream) {
    for (const auto& h : handles_)
      if (h->device == device && h->stream == stream) return h->handle;
    auto h = std::make_unique<StreamBlas>();
    h->device = device;
    h->stream = stream;
    TIDE_CUBLAS_CHECK(cublasCreate(&h->handle));
    // cublasSetStream resets the workspace to cuBLAS's own pool, so the
    // workspace is set after it.
    TIDE_CUBLAS_CHECK(cublasSetStream(h->handle, stream));
    cudaError_t e = cudaMalloc(&h->workspace, kWorkspaceBytes);
    if (e == cudaErrorMemoryAllocation) {  // the storages' cached blocks may be what it lacks
      cudaGetLastError();
      empty_cuda_cache(device);
      e = cudaMalloc(&h->workspace, kWorkspaceBytes);
    }
    TIDE_CUDA_CHECK(e);
    TIDE_CUBLAS_CHECK(cublasSetWorkspace(h->handle, h->workspace, kWorkspaceBytes));
    // Stated rather than assumed: the default math mode never lets f32
    // products use TF32 or bf16 (only the compute types below do), and
    // alpha and beta are host values.
    TIDE_CUBLAS_CHECK(cublasSetMathMode(h->handle, CUBLAS_DEFAULT_MATH));
    TIDE_CUBLAS_CHECK(cublasSetPointerMode(h->handle, CUBLAS_POINTER_MODE_HOST));
    handles_.push_back(std::move(h));
    return handles_.back()->handle;
  }

 private:
  std::vector<std::unique_ptr<StreamBlas>> handles_;
};

thread_local ThreadBlas t_blas;

cublasComputeType_t f32_compute_type(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case MatmulPrecision::bf16: return CUBLAS_COMPUTE_32F_FAST_16BF;
    case MatmulPrecision::exact: break;
  }
  return CUBLAS_COMPUTE_32F;
}

constexpr int kTile = 16;
// gridDim.y is at most 65535; taller products loop over row tiles.
constexpr unsigned kMaxGridY = 65535;

/// c = op(a) op(b) in i32 or i64 (T), wrapping around like the CPU loop:
/// the products and sums run in the unsigned type U, which is arithmetic mod
/// 2^32 (2^64) in any order, so the result is the CPU's exactly. A block
/// computes one kTile x kTile tile of c, staging kTile-wide slices of op(a)
/// and op(b) in shared memory.
template <typename T, typename U>
__global__ void gemm_int_kernel(const T* a, const T* b, T* c, std::int64_t m, std::int64_t n, std::int64_t k,
                                bool trans_a, bool trans_b) {
  __shared__ U a_tile[kTile][kTile];  // a_tile[r][p] = op(a)[row r, p0 + p]
  __shared__ U b_tile[kTile][kTile];  // b_tile[p][c] = op(b)[p0 + p, col c]
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kTile + tx;
  // The loop condition depends on the block only, so every thread of a block
  // reaches the same __syncthreads.
  for (std::int64_t tile_row = blockIdx.y; tile_row * kTile < m; tile_row += gridDim.y) {
    const std::int64_t row = tile_row * kTile + ty;
    U acc = 0;
    for (std::int64_t p0 = 0; p0 < k; p0 += kTile) {
      // Elements past an edge load as 0 and add nothing.
      const std::int64_t pa = p0 + tx, pb = p0 + ty;
      a_tile[ty][tx] = row < m && pa < k ? static_cast<U>(trans_a ? a[pa * m + row] : a[row * k + pa]) : U(0);
      b_tile[ty][tx] = pb < k && col < n ? static_cast<U>(trans_b ? b[col * k + pb] : b[pb * n + col]) : U(0);
      __syncthreads();
      for (int p = 0; p < kTile; ++p) acc += a_tile[ty][p] * b_tile[p][tx];
      __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = static_cast<T>(acc);
  }
}

}  // namespace

void gemm(void* stream_ptr, DType dtype, MatmulPrecision precision, const void* a,
          const void* b, void* c, const detail::GemmDims& d) {
  if (d.m == 0 || d.n == 0) return;
  const auto stream = static_cast<cudaStream_t>(stream_ptr);
  if (d.k == 0) {
    // An empty sum; cuBLAS would also refuse a leading dimension of 0. All
    // zero bits are 0 in every dtype.
    TIDE_CUDA_CHECK(cudaMemsetAsync(c, 0, static_cast<std::size_t>(d.m) * static_cast<std::size_t>(d.n) *
                                              dtype_size(dtype),
                                    stream));
    return;
  }
  if (dtype == DType::i32 || dtype == DType::i64) {
    const unsigned tiles_n = static_cast<unsigned>((d.n + kTile - 1) / kTile);
    const unsigned tiles_m = static_cast<unsigned>((d.m + kTile - 1) / kTile);
    const dim3 grid(tiles_n, std::min(tiles_m, kMaxGridY));
    if (dtype == DType::i32)
      gemm_int_kernel<std::int32_t, std::uint32_t><<<grid, dim3(kTile, kTile), 0, stream>>>(
          static_cast<const std::int32_t*>(a), static_cast<const std::int32_t*>(b), static_cast<std::int32_t*>(c),
          d.m, d.n, d.k, d.trans_a, d.trans_b);
    else
      gemm_int_kernel<std::int64_t, std::uint64_t><<<grid, dim3(kTile, kTile), 0, stream>>>(
          static_cast<const std::int64_t*>(a), static_cast<const std::int64_t*>(b), static_cast<std::int64_t*>(c),
          d.m, d.n, d.k, d.trans_a, d.trans_b);
    TIDE_CUDA_LAUNCH_CHECK();
    return;
  }
  // cuBLAS is column-major, and a row-major [r, c] matrix is its column-major
  // [c, r] transpose. So the row-major c = op(a) op(b) is computed as the
  // column-major c^T [n, m] = op(b)^T op(a)^T: b first, then a, each with
  // its own transpose flag, and leading dimensions the stored row lengths.
  // The backend made the op's device current; its ordinal, not the
  // engine's device index, is what cudaSetDevice takes later.
  int device = 0;
  TIDE_CUDA_CHECK(cudaGetDevice(&device));
  cublasHandle_t h = t_blas.handle(device, stream);
  const cublasOperation_t op_a = d.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = d.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int lda = d.trans_a ? d.m : d.k;
  const int ldb = d.trans_b ? d.k : d.n;
  if (dtype == DType::f64) {
    const double one = 1.0, zero = 0.0;
    TIDE_CUBLAS_CHECK(cublasGemmEx(h, op_b, op_a, d.n, d.m, d.k, &one, b, CUDA_R_64F, ldb, a,
                                   CUDA_R_64F, lda, &zero, c, CUDA_R_64F, d.n, CUBLAS_COMPUTE_64F,
                                   CUBLAS_GEMM_DEFAULT));
  } else {
    // Every f32 compute type, the fast ones included, scales by f32 values
    // and reads and writes f32 matrices.
    const float one = 1.0f, zero = 0.0f;
    TIDE_CUBLAS_CHECK(cublasGemmEx(h, op_b, op_a, d.n, d.m, d.k, &one, b, CUDA_R_32F, ldb, a,
                                   CUDA_R_32F, lda, &zero, c, CUDA_R_32F, d.n,
                                   f32_compute_type(precision), CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace tide::cuda_kernels
