// The optimizer kernels on CUDA devices (see optim_kernels.h): SGD and Adam
// on one parameter, and on up to OptimTensors::kMax parameters in one launch
// (as PyTorch's multi-tensor apply), where each block works on one
// parameter. Both run the same per-element function, and an element's new
// values depend on that element alone, so how the elements are spread over
// blocks does not change a bit.
#include "optim_kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include <tide/core/cuda_check.h>

#include "grid_util.cuh"

namespace tide::cuda_kernels {

namespace {

// The _rn intrinsics round each operation on its own, as the CPU does: nvcc
// would otherwise fuse a * b + c into one fma, which rounds once and so
// differs from the CPU in the last bit.
__device__ inline float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ inline float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ inline double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }

/// SGD's options in T, as the CPU rounds them.
template <typename T>
struct SgdScalars {
  T lr, momentum, weight_decay;
};

/// SGD on element i, in T, as the CPU computes it (cpu/optim.cc).
template <typename T>
__device__ inline void sgd_element(T* param, const T* grad, T* velocity, std::int64_t i, const SgdScalars<T>& s) {
  const T p = param[i];
  const T g = add_rn(grad[i], mul_rn(s.weight_decay, p));
  const T v = add_rn(mul_rn(s.momentum, velocity[i]), g);
  velocity[i] = v;
  param[i] = sub_rn(p, mul_rn(s.lr, v));
}

/// Adam on element i, in double, each stored value rounded to T once.
template <typename T>
__device__ inline void adam_element(T* param, const T* grad, T* m, T* v, std::int64_t i, const AdamScalars& s) {
  const double p = param[i];
  const double g = __dadd_rn(static_cast<double>(grad[i]), __dmul_rn(s.weight_decay, p));
  const T mi = static_cast<T>(__dadd_rn(__dmul_rn(s.beta1, static_cast<double>(m[i])),
                                        __dmul_rn(__dsub_rn(1.0, s.beta1), g)));
  const T vi = static_cast<T>(__dadd_rn(__dmul_rn(s.beta2, static_cast<double>(v[i])),
                                        __dmul_rn(__dmul_rn(__dsub_rn(1.0, s.beta2), g), g)));
  m[i] = mi;
  v[i] = vi;
  const double denom = __dadd_rn(__ddiv_rn(__dsqrt_rn(static_cast<double>(vi)), s.bias_correction2_sqrt), s.eps);
  param[i] = static_cast<T>(__dsub_rn(p, __dmul_rn(s.step_size, __ddiv_rn(static_cast<double>(mi), denom))));
}

template <typename T>
__global__ void sgd_kernel(T* param, const T* grad, T* velocity, std::int64_t n, SgdScalars<T> s) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) sgd_element(param, grad, velocity, i, s);
}

template <typename T>
__global__ void adam_kernel(T* param, const T* grad, T* m, T* v, std::int64_t n, AdamScalars s) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) adam_element(param, grad, m, v, i, s);
}

constexpr int kMax = OptimTensors::kMax;

/// A multi-tensor launch's arguments, passed by value (under 1 KiB, well
/// inside a kernel's parameter space): parameter k's pointers and size, and
/// its blocks, [first_block[k], first_block[k + 1]).
template <typename T>
struct ManyArgs {
  T* param[kMax];
  const T* grad[kMax];
  T* state1[kMax];
  T* state2[kMax];
  std::int64_t n[kMax];
  unsigned first_block[kMax + 1];
  int count;
};

/// The parameter this block works on: the last k whose first block is at or
/// before it (a scan of at most kMax entries, the same in every thread).
template <typename T>
__device__ inline int parameter_of_block(const ManyArgs<T>& a) {
  int k = 0;
  while (k + 1 < a.count && a.first_block[k + 1] <= blockIdx.x) ++k;
  return k;
}

/// Calls f(i) for every element i of this block's parameter, striding over
/// the parameter's blocks.
template <typename T, typename F>
__device__ inline void for_my_elements(const ManyArgs<T>& a, int k, F&& f) {
  const std::int64_t blocks = a.first_block[k + 1] - a.first_block[k];
  const std::int64_t stride = blocks * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x - a.first_block[k]) * blockDim.x + threadIdx.x;
       i < a.n[k]; i += stride)
    f(i);
}

// __grid_constant__: the arguments are read in place, not copied per
// thread, though they are indexed by a value known only at run time.
template <typename T>
__global__ void sgd_many_kernel(const __grid_constant__ ManyArgs<T> a, SgdScalars<T> s) {
  const int k = parameter_of_block(a);
  for_my_elements(a, k, [&](std::int64_t i) { sgd_element(a.param[k], a.grad[k], a.state1[k], i, s); });
}

template <typename T>
__global__ void adam_many_kernel(const __grid_constant__ ManyArgs<T> a, AdamScalars s) {
  const int k = parameter_of_block(a);
  for_my_elements(a, k, [&](std::int64_t i) { adam_element(a.param[k], a.grad[k], a.state1[k], a.state2[k], i, s); });
}

template <typename T>
SgdScalars<T> sgd_scalars(double lr, double momentum, double weight_decay) {
  return {static_cast<T>(lr), static_cast<T>(momentum), static_cast<T>(weight_decay)};
}

/// The arguments of a multi-tensor launch from `t`, empty parameters left
/// out; `blocks` is the grid (0: nothing to launch). Each parameter gets
/// the blocks a single-tensor launch would give it.
template <typename T>
ManyArgs<T> many_args(const OptimTensors& t, unsigned& blocks) {
  ManyArgs<T> a{};
  blocks = 0;
  for (int k = 0; k < t.count; ++k) {
    if (t.n[k] == 0) continue;
    const int j = a.count++;
    a.param[j] = static_cast<T*>(t.param[k]);
    a.grad[j] = static_cast<const T*>(t.grad[k]);
    a.state1[j] = static_cast<T*>(t.state1[k]);
    a.state2[j] = static_cast<T*>(t.state2[k]);
    a.n[j] = t.n[k];
    a.first_block[j] = blocks;
    blocks += grid_for(t.n[k]);  // at most kMax * kMaxBlocks = 2^20 in all
  }
  a.first_block[a.count] = blocks;
  return a;
}

std::atomic<std::uint64_t> g_many_launches{0};  // optimizer_many_launches()

}  // namespace

std::uint64_t optimizer_many_launches() { return g_many_launches.load(std::memory_order_relaxed); }

void sgd_step(void* stream, DType dtype, void* param, const void* grad, void* velocity,
              std::int64_t n, double lr, double momentum, double weight_decay) {
  if (n == 0) return;
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    sgd_kernel<<<grid_for(n), kThreads, 0, as_stream(stream)>>>(
        static_cast<T*>(param), static_cast<const T*>(grad), static_cast<T*>(velocity), n,
        sgd_scalars<T>(lr, momentum, weight_decay));
    TIDE_CUDA_LAUNCH_CHECK();
  });
}

void adam_step(void* stream, DType dtype, void* param, const void* grad, void* m, void* v,
               std::int64_t n, const AdamScalars& s) {
  if (n == 0) return;
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    adam_kernel<<<grid_for(n), kThreads, 0, as_stream(stream)>>>(
        static_cast<T*>(param), static_cast<const T*>(grad), static_cast<T*>(m), static_cast<T*>(v), n, s);
    TIDE_CUDA_LAUNCH_CHECK();
  });
}

void sgd_step_many(void* stream, DType dtype, const OptimTensors& t, double lr, double momentum,
                   double weight_decay) {
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    unsigned blocks = 0;
    const ManyArgs<T> a = many_args<T>(t, blocks);
    if (blocks == 0) return;
    sgd_many_kernel<<<blocks, kThreads, 0, as_stream(stream)>>>(a, sgd_scalars<T>(lr, momentum, weight_decay));
    TIDE_CUDA_LAUNCH_CHECK();
    g_many_launches.fetch_add(1, std::memory_order_relaxed);
  });
}

void adam_step_many(void* stream, DType dtype, const OptimTensors& t, const AdamScalars& s) {
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    unsigned blocks = 0;
    const ManyArgs<T> a = many_args<T>(t, blocks);
    if (blocks == 0) return;
    adam_many_kernel<<<blocks, kThreads, 0, as_stream(stream)>>>(a, s);
    TIDE_CUDA_LAUNCH_CHECK();
    g_many_launches.fetch_add(1, std::memory_order_relaxed);
  });
}

}  // namespace tide::cuda_kernels
