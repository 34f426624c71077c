#include "combine.h"

#include <cstring>
#include <type_traits>

namespace tide::detail {

namespace {

template <typename T>
T add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

// NaN wins, then the larger (Larger) or smaller value; written without
// branches on the data so that the loops vectorize.
template <bool Larger, typename T>
T extreme(T a, T b) {
  const T m = (Larger ? a < b : b < a) ? b : a;
  if constexpr (std::is_floating_point_v<T>) return a != a ? a : (b != b ? b : m);
  return m;
}

template <typename T, typename F>
void fold(T* out, const unsigned char* const* parts, int ranks, std::int64_t n, F f) {
  for (int r = 1; r < ranks; ++r) {
    T in[64];
    for (std::int64_t i0 = 0; i0 < n; i0 += 64) {
      const std::int64_t m = n - i0 < 64 ? n - i0 : 64;
      // The parts are aligned to 32 bytes and T is 4 or 8: a copy keeps the
      // loop free of aliasing questions.
      std::memcpy(in, parts[r] + static_cast<std::size_t>(i0) * sizeof(T), static_cast<std::size_t>(m) * sizeof(T));
      T* o = out + i0;
      for (std::int64_t i = 0; i < m; ++i) o[i] = f(o[i], in[i]);
    }
  }
}

}  // namespace

void combine_in_rank_order(void* out, const unsigned char* const* parts, int ranks, std::int64_t n, DType t,
                           ReduceOp op) {
  if (n <= 0 || ranks <= 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out);
    std::memcpy(o, parts[0], static_cast<std::size_t>(n) * sizeof(T));
    switch (op) {
      case ReduceOp::max: fold<T>(o, parts, ranks, n, [](T a, T b) { return extreme<true>(a, b); }); break;
      case ReduceOp::min: fold<T>(o, parts, ranks, n, [](T a, T b) { return extreme<false>(a, b); }); break;
      case ReduceOp::sum:
      case ReduceOp::avg: fold<T>(o, parts, ranks, n, [](T a, T b) { return add(a, b); }); break;
    }
  });
}

}  // namespace tide::detail
