// The shape of one row-major matrix product, shared by the CPU gemm
// (cpu/gemm.h) and the CUDA one (cuda/blas.h): c[m, n] = op(a)[m, k] op(b)[k, n].
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <tide/core/error.h>

namespace tide::detail {

/// op(a) is [m, k], op(b) is [k, n]. A transposed a is stored [k, m], a
/// transposed b [n, k].
struct GemmDims {
  int m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
};

/// BLAS takes int dimensions: a frontend check that every extent fits, so
/// the narrowing below is exact. Throws ShapeError naming `op`.
inline GemmDims gemm_dims(const char* op, std::int64_t m, std::int64_t n, std::int64_t k,
                          bool trans_a, bool trans_b) {
  constexpr std::int64_t kMaxDim = std::numeric_limits<int>::max();
  for (std::int64_t dim : {m, n, k})
    if (dim > kMaxDim)
      throw ShapeError(std::string(op) + ": dimension " + std::to_string(dim) +
                       " is larger than " + std::to_string(kMaxDim) + ", the most BLAS takes");
  return {static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), trans_a, trans_b};
}

}  // namespace tide::detail
