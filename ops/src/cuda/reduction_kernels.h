// CUDA reductions behind a plain C++ launcher, the CUDA reduction table's
// entry (tables.cc; conventions as in kernels.h). The input is viewed as [outer, len, inner], the
// output as [outer, inner], as in ops/src/reduction.cc.
#pragma once

#include <cstdint>

#include <tide/core/dtype.h>

#include "../kernels.h"

namespace tide::cuda_kernels {

/// sum and mean accumulate in double (f32, f64) or int64 (i32) and convert
/// once at the end, like the CPU; the order is a fixed tree that depends
/// only on (outer, len, inner), so a rerun gives identical bits, but float
/// results may differ from the CPU's sequential sum in the last bit. i32
/// sums and max are exact, except that when +0 and -0 tie for the maximum
/// either may come out (the CPU keeps the first). max needs len >= 1 (the
/// caller checks); a NaN anywhere along the axis makes its result NaN.
/// Scratch memory, when needed, is taken with cudaMallocAsync on `stream`
/// and freed on it.
void launch_reduce(kernels::ReduceOp op, DType dtype, const void* in, void* out, std::int64_t outer,
                   std::int64_t len, std::int64_t inner, void* stream);

/// Whether a reduction may run both passes in one launch where it can (the
/// columns of a few chunks; rows of at most about one wave of blocks, and
/// the cross-entropy's mean, when a stream's worker launches them): TIDE_CUDA_ONE_LAUNCH, 1 by default, 0
/// for two launches always (the A/B the GPU check runs). Read by the first
/// reduction that could take one launch; a value other than 0 or 1 fails
/// that op (and each later one that asks), with an error naming it.
bool one_launch_reductions();

/// How many reductions of rows in several chunks ran in one launch (each
/// row's last block adding its partials) in this process: how a test tells
/// that path from the two launches.
std::uint64_t rows_reduced_in_one_launch();

}  // namespace tide::cuda_kernels
