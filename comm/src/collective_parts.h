// What the collectives of collectives.cc and multi_device.cc share:
// argument checks, MPI's names for tide's types, and the frontend half of a
// collective on a CUDA tensor. Internal to comm/.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "comm_impl.h"
#include "nccl/device_collectives.h"

namespace tide::detail {

MPI_Datatype mpi_type(DType t);
MPI_Op mpi_op(ReduceOp op);
/// data[i] /= by, for `n` elements of type `t`.
void divide(void* data, std::int64_t n, DType t, int by);

/// The engine of a host collective's tensor; throws if it is undefined or
/// not on a cpu device.
Engine& engine_of(const Tensor& t, const char* name);
bool on_gpu(const Tensor& t);
/// Throws DTypeError for avg over an integer dtype.
void check_reduce(const char* name, const Tensor& t, ReduceOp op);

/// The frontend half of a collective on a CUDA tensor: refused at once in a
/// build without NCCL; numbered apart from the host collectives.
DeviceCollective device_collective(Communicator::Impl& impl, const char* name, CollectiveKind kind, const Tensor& t,
                                   int op, int root, int devices = 0);

/// The cross-rank part of an in-place all-reduce, on the comm thread: `data`
/// holds `n` elements; avg is summed here and divided by the caller.
void reduce_across_ranks(MpiGroup& mpi, const CollectiveId& what, void* data, std::int64_t n, DType dt, ReduceOp op);

}  // namespace tide::detail
