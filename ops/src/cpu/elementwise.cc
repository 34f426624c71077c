// The CPU elementwise table: one loop per (functor, dtype) that the
// compiler vectorizes, the table built by elementwise_table.h.
#include <string>

#include <tide/core/error.h>

#include "../elementwise_table.h"

namespace tide::kernels {

namespace {

struct CpuMaps {
  template <typename T, typename O, typename F>
  static void map1(const void* a, void* out, std::int64_t n, F f, void*) {
    const T* x = static_cast<const T*>(a);
    O* o = static_cast<O*>(out);
    for (std::int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
  }

  template <typename S, typename D>
  static void convert(const void* in, void* out, std::int64_t n, void*) {
    const S* x = static_cast<const S*>(in);
    D* o = static_cast<D*>(out);
    for (std::int64_t i = 0; i < n; ++i) o[i] = functors::ConvertTo<D>{}(x[i]);
  }

  template <typename C, typename T>
  static void where(const void* cond, const void* a, const void* b, void* out, std::int64_t n, void*) {
    const C* c = static_cast<const C*>(cond);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    T* o = static_cast<T*>(out);
    for (std::int64_t i = 0; i < n; ++i) o[i] = functors::Where{}(c[i], x[i], y[i]);
  }

  template <typename T, typename O, typename F>
  static void map2(const void* a, const void* b, void* out, std::int64_t n, F f, void*) {
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    O* o = static_cast<O*>(out);
    for (std::int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
  }

  /// The inner axis as one of three loops (each vectorizable: both inputs
  /// walked, or one held as a value: its strides are 1 or 0, never both 0),
  /// the outer axes as an odometer.
  template <typename T, typename O, typename F>
  static void map2_broadcast(const void* a, const void* b, void* out, const BroadcastMap& m, F f, void*) {
    const std::int64_t total = m.numel();
    if (total == 0) return;
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    O* o = static_cast<O*>(out);
    const int inner = m.ndim - 1;
    const std::int64_t n = m.extent[inner];
    std::int64_t sa[BroadcastMap::kMaxDims], sb[BroadcastMap::kMaxDims];
    m.strides(m.a_walks, sa);
    m.strides(m.b_walks, sb);
    const bool a_walks = sa[inner] != 0, b_walks = sb[inner] != 0;
    std::int64_t index[BroadcastMap::kMaxDims] = {};
    std::int64_t oa = 0, ob = 0;
    for (std::int64_t done = 0; done < total; done += n, o += n) {
      const T* xa = x + oa;
      const T* yb = y + ob;
      if (a_walks && b_walks) {
        for (std::int64_t i = 0; i < n; ++i) o[i] = f(xa[i], yb[i]);
      } else if (a_walks) {
        const T v = yb[0];
        for (std::int64_t i = 0; i < n; ++i) o[i] = f(xa[i], v);
      } else {
        const T v = xa[0];
        for (std::int64_t i = 0; i < n; ++i) o[i] = f(v, yb[i]);
      }
      for (int d = inner - 1; d >= 0; --d) {  // the next row: carry through the outer axes
        oa += sa[d];
        ob += sb[d];
        if (++index[d] < m.extent[d]) break;
        oa -= sa[d] * m.extent[d];
        ob -= sb[d] * m.extent[d];
        index[d] = 0;
      }
    }
  }

  /// Calls row(first, count, step, done) for each row of `m`'s inner axis:
  /// `count` elements at offsets first, first + step, ..., the `done`
  /// elements before them in row-major order; the outer axes as an odometer.
  template <typename Row>
  static void walk_rows(const StridedMap& m, Row row) {
    const std::int64_t total = m.numel();
    const int inner = m.ndim - 1;
    const std::int64_t n = m.extent[inner], s = m.stride[inner];
    std::int64_t index[StridedMap::kMaxDims] = {};
    std::int64_t off = m.offset;
    for (std::int64_t done = 0; done < total; done += n) {
      row(off, n, s, done);
      for (int d = inner - 1; d >= 0; --d) {
        off += m.stride[d];
        if (++index[d] < m.extent[d]) break;
        off -= m.stride[d] * m.extent[d];
        index[d] = 0;
      }
    }
  }

  /// Each row a strided (often unit-stride) loop.
  template <typename T>
  static void gather(const void* in, void* out, const StridedMap& m, void*) {
    const T* x = static_cast<const T*>(in);
    T* o = static_cast<T*>(out);
    walk_rows(m, [&](std::int64_t off, std::int64_t n, std::int64_t s, std::int64_t done) {
      const T* xs = x + off;
      T* os = o + done;
      if (s == 1) {
        for (std::int64_t i = 0; i < n; ++i) os[i] = xs[i];
      } else {
        for (std::int64_t i = 0; i < n; ++i) os[i] = xs[i * s];
      }
    });
  }

  /// Calls slice(indexed, packed) for each (outer row, index position): the
  /// slice of `inner` elements at index[i] along the axis of length `len`,
  /// and the one at position i along an axis of length `count`. Every index
  /// is checked before the first call.
  template <typename I, typename Slice>
  static void walk_index(const void* index, std::int64_t outer, std::int64_t len, std::int64_t count,
                         std::int64_t inner, Slice slice) {
    const I* idx = static_cast<const I*>(index);
    for (std::int64_t i = 0; i < count; ++i)
      if (idx[i] < 0 || idx[i] >= len)
        throw ValueError("index " + std::to_string(idx[i]) + " (at position " + std::to_string(i) +
                         " of the index) is out of range for an axis of length " + std::to_string(len));
    for (std::int64_t r = 0; r < outer; ++r)
      for (std::int64_t i = 0; i < count; ++i)
        slice((r * len + static_cast<std::int64_t>(idx[i])) * inner, (r * count + i) * inner);
  }

  template <typename T, typename I>
  static void index_select(const void* in, const void* index, void* out, std::int64_t outer, std::int64_t len,
                           std::int64_t count, std::int64_t inner, void*) {
    const T* x = static_cast<const T*>(in);
    T* o = static_cast<T*>(out);
    walk_index<I>(index, outer, len, count, inner, [&](std::int64_t indexed, std::int64_t packed) {
      for (std::int64_t j = 0; j < inner; ++j) o[packed + j] = x[indexed + j];
    });
  }

  /// In index order, so sums over a repeated index are reproducible.
  template <typename T, typename I>
  static void index_add(const void* in, const void* index, void* out, std::int64_t outer, std::int64_t len,
                        std::int64_t count, std::int64_t inner, void*) {
    const T* x = static_cast<const T*>(in);
    T* o = static_cast<T*>(out);
    walk_index<I>(index, outer, len, count, inner, [&](std::int64_t indexed, std::int64_t packed) {
      for (std::int64_t j = 0; j < inner; ++j) o[indexed + j] = functors::Add{}(o[indexed + j], x[packed + j]);
    });
  }

  /// gather's walk, writing into the input's places instead of reading them.
  template <typename T>
  static void scatter(const void* in, void* out, const StridedMap& m, void*) {
    const T* x = static_cast<const T*>(in);
    T* o = static_cast<T*>(out);
    walk_rows(m, [&](std::int64_t off, std::int64_t n, std::int64_t s, std::int64_t done) {
      T* os = o + off;
      const T* xs = x + done;
      for (std::int64_t i = 0; i < n; ++i) os[i * s] = xs[i];
    });
  }

  /// gather's walk, adding into the input's places instead of reading them
  /// (in index order, so sums over a zero stride are reproducible).
  template <typename T>
  static void scatter_add(const void* in, void* out, const StridedMap& m, void*) {
    const T* x = static_cast<const T*>(in);
    T* o = static_cast<T*>(out);
    walk_rows(m, [&](std::int64_t off, std::int64_t n, std::int64_t s, std::int64_t done) {
      T* os = o + off;
      const T* xs = x + done;
      for (std::int64_t i = 0; i < n; ++i) os[i * s] = functors::Add{}(os[i * s], xs[i]);
    });
  }
};

}  // namespace

const Elementwise cpu_elementwise = ElementwiseTable<CpuMaps>::make();

}  // namespace tide::kernels
