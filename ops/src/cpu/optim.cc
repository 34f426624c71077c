// The CPU optimizer table: one loop per step, in place. The arithmetic runs
// in double and each stored value is rounded to T once.
#include <cmath>

#include "../kernels.h"

namespace tide::kernels {

namespace {

/// Velocities are stored in T and the parameter moves by the stored value,
/// as PyTorch's momentum buffer does.
template <typename T>
void sgd_t(T* param, const T* grad, T* velocity, std::int64_t n, double lr, double momentum,
           double weight_decay) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double p = param[i];
    const double g = grad[i] + weight_decay * p;
    const T v = static_cast<T>(momentum * velocity[i] + g);
    velocity[i] = v;
    param[i] = static_cast<T>(p - lr * v);
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

}  // namespace

const Optim cpu_optim{&sgd, &adam};

}  // namespace tide::kernels
