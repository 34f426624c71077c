// The CPU elementwise table: one loop per (functor, dtype) that the
// compiler vectorizes, the table built by elementwise_table.h.
#include "../elementwise_table.h"

namespace tide::kernels {

namespace {

struct CpuMaps {
  template <typename T, typename F>
  static void map1(const void* a, void* out, std::int64_t n, F f, void*) {
    const T* x = static_cast<const T*>(a);
    T* o = static_cast<T*>(out);
    for (std::int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
  }

  template <typename T, typename F>
  static void map2(const void* a, const void* b, void* out, std::int64_t n, F f, void*) {
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    T* o = static_cast<T*>(out);
    for (std::int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
  }
};

}  // namespace

const Elementwise cpu_elementwise = ElementwiseTable<CpuMaps>::make();

}  // namespace tide::kernels
