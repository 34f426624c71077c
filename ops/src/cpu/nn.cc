// The CPU nn table: the typed loops of cpu/nn_kernels.h behind the
// type-erased entries of kernels.h.
#include "../kernels.h"
#include "nn_kernels.h"

namespace tide::kernels {

namespace {

void linear(void*, DType dtype, MatmulPrecision, const void* x, const void* w, const void* b, void* y,
            const detail::GemmDims& d) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    cpu_kernels::linear_forward(static_cast<const T*>(x), static_cast<const T*>(w),
                                static_cast<const T*>(b), static_cast<T*>(y), d);
  });
}

void column_sums(void*, DType dtype, const void* in, void* out, std::int64_t rows, std::int64_t cols) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    cpu_kernels::column_sums(static_cast<const T*>(in), static_cast<T*>(out), rows, cols);
  });
}

void relu_backward(void*, DType dtype, const void* dy, const void* x, void* dx, std::int64_t n) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    cpu_kernels::relu_backward(static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<T*>(dx), n);
  });
}

void softmax_cross_entropy(void*, DType dtype, const void* logits, const std::int32_t* labels, void* loss,
                           void* probs, std::int64_t rows, std::int64_t classes) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    cpu_kernels::softmax_cross_entropy(static_cast<const T*>(logits), labels, static_cast<T*>(loss),
                                       static_cast<T*>(probs), rows, classes);
  });
}

void softmax_cross_entropy_backward(void*, DType dtype, const void* probs, const std::int32_t* labels,
                                    void* dlogits, std::int64_t rows, std::int64_t classes) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    cpu_kernels::softmax_cross_entropy_backward(static_cast<const T*>(probs), labels,
                                                static_cast<T*>(dlogits), rows, classes);
  });
}

void argmax(void*, DType dtype, const void* in, DType index, void* out, std::int64_t outer, std::int64_t len,
            std::int64_t inner) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if (index == DType::i32)
      cpu_kernels::argmax(static_cast<const T*>(in), static_cast<std::int32_t*>(out), outer, len, inner);
    else
      cpu_kernels::argmax(static_cast<const T*>(in), static_cast<std::int64_t*>(out), outer, len, inner);
  });
}

}  // namespace

const Nn cpu_nn{&linear, &column_sums, &relu_backward, &softmax_cross_entropy,
                &softmax_cross_entropy_backward, &argmax};

}  // namespace tide::kernels
