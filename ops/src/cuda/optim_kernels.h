// The optimizer kernels on CUDA devices (defined in optim.cu), which fill
// the CUDA optim table (tables.cc). Each takes the op's stream, launches
// asynchronously and throws tide::CudaError when the launch fails. Every
// operation is rounded on its own (no fused multiply-add), so the results
// are the CPU's (ops/src/cpu/optim.cc) bit for bit.
#pragma once

#include <cstdint>

#include <tide/core/dtype.h>

#include "../kernels.h"

namespace tide::cuda_kernels {

using kernels::AdamScalars;
using kernels::OptimTensors;

/// SGD as the CPU's, in place.
void sgd_step(void* stream, DType dtype, void* param, const void* grad, void* velocity,
              std::int64_t n, double lr, double momentum, double weight_decay);

/// Adam as the CPU's, in place.
void adam_step(void* stream, DType dtype, void* param, const void* grad, void* m, void* v,
               std::int64_t n, const AdamScalars& s);

/// sgd_step over every parameter of `t` in one launch: each block belongs
/// to one parameter and runs the single-tensor kernel's arithmetic on it.
void sgd_step_many(void* stream, DType dtype, const OptimTensors& t, double lr, double momentum,
                   double weight_decay);

/// adam_step over every parameter of `t` in one launch, as sgd_step_many.
void adam_step_many(void* stream, DType dtype, const OptimTensors& t, const AdamScalars& s);

/// How many multi-tensor launches (sgd_step_many, adam_step_many) this
/// process has made: how a test tells them from launches per parameter.
std::uint64_t optimizer_many_launches();

}  // namespace tide::cuda_kernels
