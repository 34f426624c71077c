// The CPU optimizer table: one loop per step, in place. SGD computes in T
// (f32 in float, as PyTorch's does; vectorised, with an AVX2 clone); Adam
// computes in double and rounds each stored value to T once. Each operation
// is rounded on its own (no fma contraction: this file is compiled with
// -ffp-contract=off), as the CUDA kernels do, so both give the same bits.
#include <cmath>

#include "../kernels.h"
#include "vector_clones.h"

namespace tide::kernels {

namespace {

/// v = momentum v + (g + weight_decay p); p -= lr v, in T. The parameter
/// moves by the stored velocity, as PyTorch's momentum buffer does. grad
/// may be param (each element is read before it is written).
template <typename T>
TIDE_VECTOR_CLONES void sgd_t(T* param, const T* grad, T* velocity, std::int64_t n, double lr, double momentum,
                              double weight_decay) {
  const T lr_t = static_cast<T>(lr), momentum_t = static_cast<T>(momentum), wd_t = static_cast<T>(weight_decay);
  for (std::int64_t i = 0; i < n; ++i) {
    const T p = param[i];
    const T g = grad[i] + wd_t * p;
    const T v = momentum_t * velocity[i] + g;
    velocity[i] = v;
    param[i] = p - lr_t * v;
  }
}

template <typename T>
void adam_t(T* param, const T* grad, T* m, T* v, std::int64_t n, const AdamScalars& s) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double p = param[i];
    const double g = grad[i] + s.weight_decay * p;
    const T mi = static_cast<T>(s.beta1 * m[i] + (1.0 - s.beta1) * g);
    const T vi = static_cast<T>(s.beta2 * v[i] + (1.0 - s.beta2) * g * g);
    m[i] = mi;
    v[i] = vi;
    const double denom = std::sqrt(static_cast<double>(vi)) / s.bias_correction2_sqrt + s.eps;
    param[i] = static_cast<T>(p - s.step_size * (mi / denom));
  }
}

void sgd(void*, DType dtype, void* param, const void* grad, void* velocity, std::int64_t n, double lr,
         double momentum, double weight_decay) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    sgd_t(static_cast<T*>(param), static_cast<const T*>(grad), static_cast<T*>(velocity), n, lr, momentum,
          weight_decay);
  });
}

void adam(void*, DType dtype, void* param, const void* grad, void* m, void* v, std::int64_t n,
          const AdamScalars& s) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    adam_t(static_cast<T*>(param), static_cast<const T*>(grad), static_cast<T*>(m), static_cast<T*>(v), n, s);
  });
}

// The multi-tensor steps: the single-tensor loops, one parameter after
// another (on the CPU one op saves pushes, not kernel launches).
void sgd_many(void* stream, DType dtype, const OptimTensors& t, double lr, double momentum, double weight_decay) {
  for (int k = 0; k < t.count; ++k)
    sgd(stream, dtype, t.param[k], t.grad[k], t.state1[k], t.n[k], lr, momentum, weight_decay);
}

void adam_many(void* stream, DType dtype, const OptimTensors& t, const AdamScalars& s) {
  for (int k = 0; k < t.count; ++k) adam(stream, dtype, t.param[k], t.grad[k], t.state1[k], t.state2[k], t.n[k], s);
}

}  // namespace

const Optim cpu_optim{&sgd, &adam, &sgd_many, &adam_many};

}  // namespace tide::kernels
