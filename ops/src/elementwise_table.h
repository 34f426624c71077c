// Builds a device kind's elementwise table (kernels.h) from the op lists and
// the functors of elementwise_functors.h. A backend supplies only its two
// loops, as static members of `Maps`:
//
//   template <typename T, typename O, typename F>
//   static void map1(const void* a, void* out, std::int64_t n, F f, void* stream);
//   template <typename T, typename O, typename F>
//   static void map2(const void* a, const void* b, void* out, std::int64_t n, F f, void* stream);
//
//   template <typename T, typename O, typename F>
//   static void map2_broadcast(const void* a, const void* b, void* out,
//                              const BroadcastMap& map, F f, void* stream);
//   template <typename T>
//   static void gather(const void* in, void* out, const StridedMap& map,
//                      void* stream);
//   template <typename T>
//   static void scatter_add(const void* in, void* out, const StridedMap& map,
//                           void* stream);
//   (and scatter, the same writing rather than adding)
//   template <typename S, typename D>
//   static void convert(const void* in, void* out, std::int64_t n, void* stream);
//   template <typename C, typename T>
//   static void where(const void* cond, const void* a, const void* b, void* out,
//                     std::int64_t n, void* stream);
//   template <typename T, typename I>
//   static void index_select(const void* in, const void* index, void* out, std::int64_t outer,
//                            std::int64_t len, std::int64_t count, std::int64_t inner, void* stream);
//   (and index_add, the same)
//
// (out[i] = f(a[i]) and out[i] = f(a[i], b[i]) over n elements of T into
// O, which is T but for comparisons (bool), and the second along a broadcast
// map), and the same table-building code serves the CPU and CUDA. Gathers,
// conversions, where and index_select take bool tensors too
// (dispatch_dtype_or_bool); arithmetic does not.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "elementwise_functors.h"
#include "kernels.h"

namespace tide::kernels {

template <typename Maps>
struct ElementwiseTable {
  /// What an integer dtype gets from an op for floating dtypes only (the
  /// frontend refuses it first; this keeps the table total).
  [[noreturn]] static void floating_only() { throw DTypeError("this op needs a floating dtype (f32 or f64)"); }

  /// What a functor writes: bool for a comparison, else T.
  template <typename T, typename F>
  using Out = std::conditional_t<functors::kComparesOp<F>, bool, T>;

  /// Comparisons and logical ops take bool operands too.
  template <typename F, typename G>
  static void dispatch_for(DType dtype, G&& g) {
    if constexpr (functors::kComparesOp<F>) dispatch_dtype_or_bool(dtype, std::forward<G>(g));
    else dispatch_dtype(dtype, std::forward<G>(g));
  }

  template <typename F>
  static void binary(DType dtype, const void* a, const void* b, void* out, std::int64_t n, void* stream) {
    dispatch_for<F>(dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (functors::kIsInt<T> && functors::kFloatingOnlyOp<F>) floating_only();
      else Maps::template map2<T, Out<T, F>>(a, b, out, n, F{}, stream);
    });
  }

  template <typename F>
  static void broadcast(DType dtype, const void* a, const void* b, void* out, const BroadcastMap& map,
                        void* stream) {
    dispatch_for<F>(dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (functors::kIsInt<T> && functors::kFloatingOnlyOp<F>) floating_only();
      else Maps::template map2_broadcast<T, Out<T, F>>(a, b, out, map, F{}, stream);
    });
  }

  static void strided_copy(DType dtype, const void* in, void* out, const StridedMap& map, void* stream) {
    dispatch_dtype_or_bool(dtype, [&](auto tag) {
      using T = decltype(tag);
      Maps::template gather<T>(in, out, map, stream);
    });
  }

  static void strided_scatter_add(DType dtype, const void* in, void* out, const StridedMap& map, void* stream) {
    dispatch_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      Maps::template scatter_add<T>(in, out, map, stream);
    });
  }

  static void strided_scatter(DType dtype, const void* in, void* out, const StridedMap& map, void* stream) {
    dispatch_dtype_or_bool(dtype, [&](auto tag) { Maps::template scatter<decltype(tag)>(in, out, map, stream); });
  }

  static void cast(DType from, DType to, const void* in, void* out, std::int64_t n, void* stream) {
    dispatch_dtype_or_bool(from, [&](auto s) {
      dispatch_dtype_or_bool(to, [&](auto d) {
        Maps::template convert<decltype(s), decltype(d)>(in, out, n, stream);
      });
    });
  }

  static void where(DType dtype, DType cond_dtype, const void* cond, const void* a, const void* b, void* out,
                    std::int64_t n, void* stream) {
    dispatch_dtype_or_bool(cond_dtype, [&](auto c) {
      dispatch_dtype_or_bool(dtype, [&](auto t) {
        Maps::template where<decltype(c), decltype(t)>(cond, a, b, out, n, stream);
      });
    });
  }

  template <bool Add>
  static void index(DType dtype, DType index_dtype, const void* in, const void* index, void* out,
                    std::int64_t outer, std::int64_t len, std::int64_t count, std::int64_t inner, void* stream) {
    dispatch_dtype(index_dtype, [&](auto itag) {
      using I = decltype(itag);
      if constexpr (!functors::kIsInt<I>) {
        throw DTypeError("an index must be i32 or i64");
      } else {
        if constexpr (Add) {
          dispatch_dtype(dtype, [&](auto tag) {
            Maps::template index_add<decltype(tag), I>(in, index, out, outer, len, count, inner, stream);
          });
        } else {
          dispatch_dtype_or_bool(dtype, [&](auto tag) {
            Maps::template index_select<decltype(tag), I>(in, index, out, outer, len, count, inner, stream);
          });
        }
      }
    });
  }

  /// The scalar is converted to T here, on the host (static_cast, integers
  /// truncating toward zero), for every device.
  template <typename F, bool Reversed>
  static void scalar(DType dtype, const void* a, double s, void* out, std::int64_t n, void* stream) {
    dispatch_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (functors::kIsInt<T> && functors::kFloatingOnlyOp<F>) floating_only();
      else
        Maps::template map1<T, Out<T, F>>(a, out, n, functors::WithScalar<F, Reversed, T>{static_cast<T>(s)},
                                          stream);
    });
  }

  template <typename F>
  static void unary(DType dtype, const void* a, void* out, std::int64_t n, void* stream) {
    dispatch_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (functors::kIsInt<T> && F::kFloatingOnly) floating_only();
      else Maps::template map1<T, T>(a, out, n, F{}, stream);
    });
  }

  static constexpr Elementwise make() {
    Elementwise t;
#define TIDE_FILL_BINARY(name, F)                                          \
  t.binary[static_cast<int>(BinaryOp::name)] = &binary<functors::F>;        \
  t.broadcast[static_cast<int>(BinaryOp::name)] = &broadcast<functors::F>;  \
  t.scalar[static_cast<int>(BinaryOp::name)] = &scalar<functors::F, false>; \
  t.rscalar[static_cast<int>(BinaryOp::name)] = &scalar<functors::F, true>;
#define TIDE_FILL_UNARY(name, F) t.unary[static_cast<int>(UnaryOp::name)] = &unary<functors::F>;
    TIDE_BINARY_OPS(TIDE_FILL_BINARY)
    TIDE_UNARY_OPS(TIDE_FILL_UNARY)
    t.strided_copy = &strided_copy;
    t.strided_scatter_add = &strided_scatter_add;
    t.strided_scatter = &strided_scatter;
    t.cast = &cast;
    t.where = &where;
    t.index_select = &index<false>;
    t.index_add = &index<true>;
#undef TIDE_FILL_BINARY
#undef TIDE_FILL_UNARY
    return t;
  }
};

}  // namespace tide::kernels
