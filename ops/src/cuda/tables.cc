// The CUDA tables other than the elementwise one (which
// elementwise_kernels.cu generates from the op lists): the launchers of
// creation_kernels.h, reduction_kernels.h, blas.h and nn_kernels.h; and the
// CUDA row of kernels.h, which holds them all.
#include "../kernels.h"
#include "blas.h"
#include "creation_kernels.h"
#include "nn_kernels.h"
#include "optim_kernels.h"
#include "reduction_kernels.h"

namespace tide::kernels {

namespace {

/// cuBLAS's gemm, then a bias kernel on the same stream.
void linear(void* stream, DType dtype, MatmulPrecision precision, const void* x, const void* w,
            const void* b, void* y, const detail::GemmDims& d) {
  cuda_kernels::gemm(stream, dtype, precision, x, w, y, d);
  cuda_kernels::add_row_bias(stream, dtype, y, b, d.m, d.n);
}

}  // namespace

const Creation cuda_creation{&cuda_kernels::launch_fill, &cuda_kernels::launch_arange,
                             &cuda_kernels::launch_random, &cuda_kernels::copy_host_to_device};
const Reduction cuda_reduction{&cuda_kernels::launch_reduce};
const Linalg cuda_linalg{&cuda_kernels::gemm};
const Nn cuda_nn{&linear,
                 &cuda_kernels::column_sums,
                 &cuda_kernels::relu_backward,
                 &cuda_kernels::softmax_cross_entropy,
                 &cuda_kernels::softmax_cross_entropy_backward,
                 &cuda_kernels::argmax};
const Optim cuda_optim{&cuda_kernels::sgd_step, &cuda_kernels::adam_step, &cuda_kernels::sgd_step_many,
                       &cuda_kernels::adam_step_many};

const KernelRow cuda_row{&cuda_elementwise, &cuda_creation, &cuda_reduction, &cuda_linalg, &cuda_nn, &cuda_optim};

}  // namespace tide::kernels
