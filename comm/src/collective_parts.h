// What the collectives of collectives.cc and multi_device.cc share:
// argument checks, MPI's names for tide's types, the frontend half of a
// collective on a CUDA tensor and the kernel of a host one. Internal to
// comm/.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "comm_impl.h"
#include "nccl/device_collectives.h"

namespace tide::detail {

MPI_Datatype mpi_type(DType t);
MPI_Op mpi_op(ReduceOp op);

/// The engine of a host collective's tensor; throws if it is undefined or
/// not on a cpu device.
Engine& engine_of(const Tensor& t, const char* name);
bool on_gpu(const Tensor& t);
/// Throws DTypeError for avg over an integer dtype.
void check_reduce(const char* name, const Tensor& t, ReduceOp op);

/// The frontend half of a collective on a CUDA tensor: refused at once in a
/// build without NCCL; numbered apart from the host collectives.
CollectiveId device_collective(Communicator::Impl& impl, const char* name, CollectiveKind kind, const Tensor& t,
                               std::optional<ReduceOp> op, int root, int devices = 0);

/// The kernel of a host collective with tensors, on the comm thread: the
/// record's MPI call from `in` to `out` (the same buffer in place), or over
/// one rank the local equivalent; then avg's division, by the ranks times
/// `what.devices` (the tensors per rank of a several-device all-reduce).
void run_host_collective(const CollectiveSpec& spec, MpiGroup& mpi, const CollectiveId& what, const void* in,
                         void* out, std::size_t in_bytes, std::size_t out_bytes);

}  // namespace tide::detail
