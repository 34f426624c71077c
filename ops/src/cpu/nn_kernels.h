// CPU kernels for the nn ops (the CPU nn table, cpu/nn.cc): plain loops
// over contiguous row-major arrays. Sums and the softmax run in double in index order and
// round to T once per stored value, so results do not depend on threads or
// vector widths.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <tide/core/error.h>

#include "gemm.h"

namespace tide::cpu_kernels {

/// y [m, n] = x [m, k] w^T + b, where w is [n, k]; d.trans_b is set.
template <typename T>
void linear_forward(const T* x, const T* w, const T* b, T* y, GemmDims d) {
  // Each row starts as the bias and the product accumulates onto it (BLAS's
  // beta = 1): the bias costs a copy of its row rather than a second pass
  // over y after the product.
  const std::size_t row_bytes = static_cast<std::size_t>(d.n) * sizeof(T);
  for (std::int64_t i = 0; i < d.m; ++i) std::memcpy(y + i * d.n, b, row_bytes);
  gemm(x, w, y, d, true);
}

/// out[j] = sum over r of in[r, j], for in [rows, cols].
template <typename T>
void column_sums(const T* in, T* out, std::int64_t rows, std::int64_t cols) {
  // One running total per column, so `in` is read in memory order.
  std::vector<double> acc(static_cast<std::size_t>(cols), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* row = in + r * cols;
    for (std::int64_t j = 0; j < cols; ++j) acc[static_cast<std::size_t>(j)] += row[j];
  }
  for (std::int64_t j = 0; j < cols; ++j) out[j] = static_cast<T>(acc[static_cast<std::size_t>(j)]);
}

template <typename T>
void relu_backward(const T* dy, const T* x, T* dx, std::int64_t n) {
  // Both loads unconditional, so the select needs no branch and vectorises.
  for (std::int64_t i = 0; i < n; ++i) {
    const T d = dy[i];
    dx[i] = x[i] > T(0) ? d : T(0);
  }
}

/// Throws (failing the op) when labels[r] is outside [0, classes).
inline void check_label(const char* op, std::int64_t row, std::int32_t label, std::int64_t classes) {
  if (label < 0 || label >= classes)
    throw ValueError(std::string(op) + ": label " + std::to_string(label) + " in row " +
                     std::to_string(row) + " is outside [0, " + std::to_string(classes) +
                     ") for " + std::to_string(classes) + " classes");
}

/// probs = softmax of each row of logits [rows, classes]; *loss = the mean
/// over rows of -log probs[r, labels[r]] = (max_r - x[r, label]) + log sum_j
/// exp(x[r, j] - max_r). Subtracting the row's max keeps every exp in (0, 1]
/// with at least one term equal to 1, so nothing overflows and the log's
/// argument is at least 1. rows >= 1, classes >= 1.
template <typename T>
void softmax_cross_entropy(const T* logits, const std::int32_t* labels, T* loss, T* probs,
                           std::int64_t rows, std::int64_t classes) {
  std::vector<double> e(static_cast<std::size_t>(classes));
  double total = 0.0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int32_t label = labels[r];
    check_label("softmax_cross_entropy", r, label, classes);
    const T* x = logits + r * classes;
    double row_max = x[0];
    for (std::int64_t j = 1; j < classes; ++j) row_max = std::max(row_max, static_cast<double>(x[j]));
    double s = 0.0;
    for (std::int64_t j = 0; j < classes; ++j) {
      e[static_cast<std::size_t>(j)] = std::exp(static_cast<double>(x[j]) - row_max);
      s += e[static_cast<std::size_t>(j)];
    }
    T* p = probs + r * classes;
    for (std::int64_t j = 0; j < classes; ++j) p[j] = static_cast<T>(e[static_cast<std::size_t>(j)] / s);
    total += (row_max - static_cast<double>(x[label])) + std::log(s);
  }
  *loss = static_cast<T>(total / static_cast<double>(rows));
}

/// dlogits = (probs - onehot(labels)) / rows.
template <typename T>
void softmax_cross_entropy_backward(const T* probs, const std::int32_t* labels, T* dlogits,
                                    std::int64_t rows, std::int64_t classes) {
  const double n = static_cast<double>(rows);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int32_t label = labels[r];
    check_label("softmax_cross_entropy_backward", r, label, classes);
    const T* p = probs + r * classes;
    T* d = dlogits + r * classes;
    for (std::int64_t j = 0; j < classes; ++j)
      d[j] = static_cast<T>((static_cast<double>(p[j]) - (j == label ? 1.0 : 0.0)) / n);
  }
}

/// out[o, j] = the first k maximising in[o, k, j] (a NaN beats any number,
/// and the first NaN wins). len >= 1.
template <typename T, typename I>
void argmax(const T* in, I* out, std::int64_t outer, std::int64_t len, std::int64_t inner) {
  for (std::int64_t o = 0; o < outer; ++o) {
    const T* block = in + o * len * inner;
    for (std::int64_t j = 0; j < inner; ++j) {
      T best = block[j];
      std::int64_t best_k = 0;
      for (std::int64_t k = 1; k < len; ++k) {
        const T v = block[k * inner + j];
        bool better = v > best;
        if constexpr (std::is_floating_point_v<T>) better = !std::isnan(best) && (better || std::isnan(v));
        if (better) {
          best = v;
          best_k = k;
        }
      }
      out[o * inner + j] = static_cast<I>(best_k);
    }
  }
}

}  // namespace tide::cpu_kernels
