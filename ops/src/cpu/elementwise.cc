// The CPU elementwise table, generated from the op lists in kernels.h: one
// loop per (functor, dtype) that the compiler vectorizes.
#include "../elementwise_functors.h"
#include "../kernels.h"

namespace tide::kernels {

namespace {

template <typename T, typename F>
void map1(const T* a, T* out, std::int64_t n, F f) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = f(a[i]);
}

template <typename T, typename F>
void map2(const T* a, const T* b, T* out, std::int64_t n, F f) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}

template <typename F>
void binary(DType dtype, const void* a, const void* b, void* out, std::int64_t n, void*) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    map2(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), n, F{});
  });
}

template <typename F, bool Reversed>
void scalar(DType dtype, const void* a, double s, void* out, std::int64_t n, void*) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const functors::WithScalar<F, Reversed, T> f{static_cast<T>(s)};
    map1(static_cast<const T*>(a), static_cast<T*>(out), n, f);
  });
}

template <typename F>
void unary(DType dtype, const void* a, void* out, std::int64_t n, void*) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (functors::kIsI32<T> && F::kFloatingOnly)
      throw DTypeError("exp and log need a floating dtype (f32 or f64)");
    else map1(static_cast<const T*>(a), static_cast<T*>(out), n, F{});
  });
}

constexpr Elementwise make_table() {
  Elementwise t;
#define TIDE_FILL_BINARY(name, F)                                           \
  t.binary[static_cast<int>(BinaryOp::name)] = &binary<functors::F>;         \
  t.scalar[static_cast<int>(BinaryOp::name)] = &scalar<functors::F, false>;  \
  t.rscalar[static_cast<int>(BinaryOp::name)] = &scalar<functors::F, true>;
#define TIDE_FILL_UNARY(name, F) t.unary[static_cast<int>(UnaryOp::name)] = &unary<functors::F>;
  TIDE_BINARY_OPS(TIDE_FILL_BINARY)
  TIDE_UNARY_OPS(TIDE_FILL_UNARY)
#undef TIDE_FILL_BINARY
#undef TIDE_FILL_UNARY
  return t;
}

}  // namespace

const Elementwise cpu_elementwise = make_table();

}  // namespace tide::kernels
