// The CPU reduction table: sequential loops over [outer, len, inner] that
// read the input in memory order. The order is fixed, so results are
// bitwise reproducible run to run and equal to a plain loop in the
// accumulator type.
#include <algorithm>
#include <vector>

#include "../kernels.h"
#include "../reduce_functors.h"

namespace tide::kernels {

namespace {

using functors::MaxOp;
using functors::SumOp;

template <typename T>
void sum_rows(const T* in, T* out, std::int64_t outer, std::int64_t len, std::int64_t inner,
              bool mean) {
  using Acc = typename SumOp<T>::Acc;
  // One running total per inner position, so the input is read in order.
  std::vector<Acc> acc(static_cast<std::size_t>(inner));
  for (std::int64_t o = 0; o < outer; ++o) {
    std::fill(acc.begin(), acc.end(), SumOp<T>::identity());
    const T* block = in + o * len * inner;
    for (std::int64_t k = 0; k < len; ++k) {
      const T* row = block + k * inner;
      for (std::int64_t j = 0; j < inner; ++j) {
        Acc& a = acc[static_cast<std::size_t>(j)];
        a = SumOp<T>::combine(a, static_cast<Acc>(row[j]));
      }
    }
    T* dst = out + o * inner;
    for (std::int64_t j = 0; j < inner; ++j)
      dst[j] = functors::finish<T>(acc[static_cast<std::size_t>(j)], len, mean);
  }
}

/// max or min (Op: MaxOp or MinOp) along the rows.
template <typename Op, typename T>
void extreme_rows(const T* in, T* out, std::int64_t outer, std::int64_t len, std::int64_t inner) {
  for (std::int64_t o = 0; o < outer; ++o) {  // len >= 1 (the frontend checks)
    const T* block = in + o * len * inner;
    T* dst = out + o * inner;
    for (std::int64_t j = 0; j < inner; ++j) dst[j] = block[j];
    for (std::int64_t k = 1; k < len; ++k) {
      const T* row = block + k * inner;
      for (std::int64_t j = 0; j < inner; ++j) dst[j] = Op::combine(dst[j], row[j]);
    }
  }
}

void reduce(ReduceOp op, DType dtype, const void* in, void* out, std::int64_t outer, std::int64_t len,
            std::int64_t inner, void*) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(in);
    T* dst = static_cast<T*>(out);
    if (op == ReduceOp::max) extreme_rows<MaxOp<T>>(src, dst, outer, len, inner);
    else if (op == ReduceOp::min) extreme_rows<functors::MinOp<T>>(src, dst, outer, len, inner);
    else sum_rows(src, dst, outer, len, inner, op == ReduceOp::mean);
  });
}

}  // namespace

const Reduction cpu_reduction{&reduce};

}  // namespace tide::kernels
