// The optimizer kernels on CUDA devices (see optim_kernels.h): SGD and Adam
// on one parameter, and on up to OptimTensors::kMax parameters in one launch
// (as PyTorch's multi-tensor apply), where each block works on one
// parameter. Both run the same per-element function, and an element's new
// values depend on that element alone, so how the elements are spread over
// blocks does not change a bit. A parameter whose arrays are all 16-byte
// aligned goes by 16-byte packs (the elements past its last whole pack one
// by one), where one element per thread kept too few loads in flight.
#include "optim_kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <initializer_list>

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

/// SGD on one element, in T, as the CPU computes it (cpu/optim.cc): the
/// parameter p, its gradient g and its velocity v in, the new p and v out.
template <typename T>
__device__ inline void sgd_value(T& p, T g, T& v, const SgdScalars<T>& s) {
  const T d = add_rn(g, mul_rn(s.weight_decay, p));
  v = add_rn(mul_rn(s.momentum, v), d);
  p = sub_rn(p, mul_rn(s.lr, v));
}

/// Adam on one element, in double, each stored value rounded to T once.
template <typename T>
__device__ inline void adam_value(T& param, T grad, T& m, T& v, const AdamScalars& s) {
  const double p = param;
  const double g = __dadd_rn(static_cast<double>(grad), __dmul_rn(s.weight_decay, p));
  m = static_cast<T>(__dadd_rn(__dmul_rn(s.beta1, static_cast<double>(m)), __dmul_rn(__dsub_rn(1.0, s.beta1), g)));
  v = static_cast<T>(__dadd_rn(__dmul_rn(s.beta2, static_cast<double>(v)),
                               __dmul_rn(__dmul_rn(__dsub_rn(1.0, s.beta2), g), g)));
  const double denom = __dadd_rn(__ddiv_rn(__dsqrt_rn(static_cast<double>(v)), s.bias_correction2_sqrt), s.eps);
  param = static_cast<T>(__dsub_rn(p, __dmul_rn(s.step_size, __ddiv_rn(static_cast<double>(m), denom))));
}

/// An update of element i (Packed: of the 16-byte pack i, every lane by the
/// same per-element function, so the bits do not depend on the path): each
/// of the arrays read whole before any is written, so a gradient that is
/// its own parameter reads the old values, as element by element.
template <typename T, bool Packed>
struct Sgd {
  T* param;
  const T* grad;
  T* velocity;
  SgdScalars<T> s;
  __device__ void operator()(std::int64_t i) const {
    if constexpr (Packed) {
      using P = Pack16<T>;
      P p = reinterpret_cast<P*>(param)[i];
      const P g = reinterpret_cast<const P*>(grad)[i];
      P v = reinterpret_cast<P*>(velocity)[i];
#pragma unroll
      for (int l = 0; l < P::kWidth; ++l) sgd_value(p.v[l], g.v[l], v.v[l], s);
      reinterpret_cast<P*>(velocity)[i] = v;
      reinterpret_cast<P*>(param)[i] = p;
    } else {
      T p = param[i], v = velocity[i];
      sgd_value(p, grad[i], v, s);
      velocity[i] = v;
      param[i] = p;
    }
  }
};

template <typename T, bool Packed>
struct Adam {
  T* param;
  const T* grad;
  T* m;
  T* v;
  AdamScalars s;
  __device__ void operator()(std::int64_t i) const {
    if constexpr (Packed) {
      using P = Pack16<T>;
      P p = reinterpret_cast<P*>(param)[i];
      const P g = reinterpret_cast<const P*>(grad)[i];
      P mi = reinterpret_cast<P*>(m)[i];
      P vi = reinterpret_cast<P*>(v)[i];
#pragma unroll
      for (int l = 0; l < P::kWidth; ++l) adam_value(p.v[l], g.v[l], mi.v[l], vi.v[l], s);
      reinterpret_cast<P*>(m)[i] = mi;
      reinterpret_cast<P*>(v)[i] = vi;
      reinterpret_cast<P*>(param)[i] = p;
    } else {
      T p = param[i], mi = m[i], vi = v[i];
      adam_value(p, grad[i], mi, vi, s);
      m[i] = mi;
      v[i] = vi;
      param[i] = p;
    }
  }
};

/// Whether an update of n elements goes by packs: every pointer 16-byte
/// aligned (the pack's width may not divide n: the rest goes element by
/// element).
inline bool all_aligned(std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0) return false;
  return true;
}

/// The work items of n elements: packs (and one more item for the
/// elements past the last whole pack, done one by one by the thread that
/// gets it) or elements.
template <typename T>
__host__ __device__ inline std::int64_t items_of(std::int64_t n, bool packed) {
  if (!packed) return n;
  constexpr std::int64_t w = Pack16<T>::kWidth;
  return n / w + (n % w != 0 ? 1 : 0);
}

/// Calls the packed update on item i of n elements, or, for the last item
/// when it is a partial pack, the element update on its elements.
template <typename T, typename PackF, typename ElemF>
__device__ inline void packed_item(std::int64_t i, std::int64_t n, const PackF& pack, const ElemF& elem) {
  constexpr std::int64_t w = Pack16<T>::kWidth;
  if ((i + 1) * w <= n) {
    pack(i);
  } else {
    for (std::int64_t e = i * w; e < n; ++e) elem(e);
  }
}

template <typename T, bool Packed>
__global__ void sgd_kernel(Sgd<T, Packed> f, Sgd<T, false> elem, std::int64_t n, std::int64_t items) {
  for (std::int64_t i = first_index(); i < items; i += grid_stride()) {
    if constexpr (Packed) packed_item<T>(i, n, f, elem);
    else f(i);
  }
}

template <typename T, bool Packed>
__global__ void adam_kernel(Adam<T, Packed> f, Adam<T, false> elem, std::int64_t n, std::int64_t items) {
  for (std::int64_t i = first_index(); i < items; i += grid_stride()) {
    if constexpr (Packed) packed_item<T>(i, n, f, elem);
    else f(i);
  }
}

constexpr int kMax = OptimTensors::kMax;

/// A multi-tensor launch's arguments, passed by value (about 1 KiB, well
/// inside a kernel's parameter space): parameter k's pointers and size,
/// whether it goes by packs, and its blocks, [first_block[k],
/// first_block[k + 1]).
template <typename T>
struct ManyArgs {
  T* param[kMax];
  const T* grad[kMax];
  T* state1[kMax];
  T* state2[kMax];
  std::int64_t n[kMax];
  bool packed[kMax];
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

/// Calls f(i) for every work item i of this block's parameter (items_of:
/// its packs or its elements), striding over the parameter's blocks.
template <typename T, typename F>
__device__ inline void for_my_items(const ManyArgs<T>& a, int k, F&& f) {
  const std::int64_t blocks = a.first_block[k + 1] - a.first_block[k];
  const std::int64_t stride = blocks * blockDim.x;
  const std::int64_t items = items_of<T>(a.n[k], a.packed[k]);
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x - a.first_block[k]) * blockDim.x + threadIdx.x;
       i < items; i += stride)
    f(i);
}

// __grid_constant__: the arguments are read in place, not copied per
// thread, though they are indexed by a value known only at run time.
template <typename T>
__global__ void sgd_many_kernel(const __grid_constant__ ManyArgs<T> a, SgdScalars<T> s) {
  const int k = parameter_of_block(a);
  const Sgd<T, false> elem{a.param[k], a.grad[k], a.state1[k], s};
  if (a.packed[k]) {
    const Sgd<T, true> pack{a.param[k], a.grad[k], a.state1[k], s};
    for_my_items(a, k, [&](std::int64_t i) { packed_item<T>(i, a.n[k], pack, elem); });
  } else {
    for_my_items(a, k, elem);
  }
}

template <typename T>
__global__ void adam_many_kernel(const __grid_constant__ ManyArgs<T> a, AdamScalars s) {
  const int k = parameter_of_block(a);
  const Adam<T, false> elem{a.param[k], a.grad[k], a.state1[k], a.state2[k], s};
  if (a.packed[k]) {
    const Adam<T, true> pack{a.param[k], a.grad[k], a.state1[k], a.state2[k], s};
    for_my_items(a, k, [&](std::int64_t i) { packed_item<T>(i, a.n[k], pack, elem); });
  } else {
    for_my_items(a, k, elem);
  }
}

template <typename T>
SgdScalars<T> sgd_scalars(double lr, double momentum, double weight_decay) {
  return {static_cast<T>(lr), static_cast<T>(momentum), static_cast<T>(weight_decay)};
}

/// The arguments of a multi-tensor launch from `t` (`states`: the state
/// arrays the step uses, 1 for SGD and 2 for Adam), empty parameters left
/// out; `blocks` is the grid (0: nothing to launch). Each parameter gets
/// the blocks a single-tensor launch would give it.
template <typename T>
ManyArgs<T> many_args(const OptimTensors& t, int states, unsigned& blocks) {
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
    a.packed[j] = all_aligned({t.param[k], t.grad[k], t.state1[k], states > 1 ? t.state2[k] : nullptr});
    a.first_block[j] = blocks;
    blocks += grid_for(items_of<T>(t.n[k], a.packed[j]));  // at most kMax * kMaxBlocks = 2^20 in all
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
    auto* p = static_cast<T*>(param);
    const auto* g = static_cast<const T*>(grad);
    auto* v = static_cast<T*>(velocity);
    const SgdScalars<T> s = sgd_scalars<T>(lr, momentum, weight_decay);
    const Sgd<T, false> elem{p, g, v, s};
    if (all_aligned({param, grad, velocity})) {
      const std::int64_t items = items_of<T>(n, true);
      sgd_kernel<T, true><<<grid_for(items), kThreads, 0, as_stream(stream)>>>(Sgd<T, true>{p, g, v, s}, elem, n,
                                                                               items);
    } else {
      sgd_kernel<T, false><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(elem, elem, n, n);
    }
    TIDE_CUDA_LAUNCH_CHECK();
  });
}

void adam_step(void* stream, DType dtype, void* param, const void* grad, void* m, void* v,
               std::int64_t n, const AdamScalars& s) {
  if (n == 0) return;
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto* p = static_cast<T*>(param);
    const auto* g = static_cast<const T*>(grad);
    auto* mm = static_cast<T*>(m);
    auto* vv = static_cast<T*>(v);
    const Adam<T, false> elem{p, g, mm, vv, s};
    if (all_aligned({param, grad, m, v})) {
      const std::int64_t items = items_of<T>(n, true);
      adam_kernel<T, true><<<grid_for(items), kThreads, 0, as_stream(stream)>>>(Adam<T, true>{p, g, mm, vv, s},
                                                                                elem, n, items);
    } else {
      adam_kernel<T, false><<<grid_for(n), kThreads, 0, as_stream(stream)>>>(elem, elem, n, n);
    }
    TIDE_CUDA_LAUNCH_CHECK();
  });
}

void sgd_step_many(void* stream, DType dtype, const OptimTensors& t, double lr, double momentum,
                   double weight_decay) {
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    unsigned blocks = 0;
    const ManyArgs<T> a = many_args<T>(t, 1, blocks);
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
    const ManyArgs<T> a = many_args<T>(t, 2, blocks);
    if (blocks == 0) return;
    adam_many_kernel<<<blocks, kThreads, 0, as_stream(stream)>>>(a, s);
    TIDE_CUDA_LAUNCH_CHECK();
    g_many_launches.fetch_add(1, std::memory_order_relaxed);
  });
}

}  // namespace tide::cuda_kernels
