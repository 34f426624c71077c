// What each collective is, one record per kind: its name, whether it
// reduces or has a root, the shape of its result, the element count MPI and
// NCCL are given, and the MPI and NCCL calls that run it. The frontend
// (collectives.cc) checks and pushes any collective from its record, the
// host runner and the NCCL runner call through it, and the desync check,
// the liveness reports and the flight recorder name collectives from it.
// Adding a collective is adding a kind and a row (collective_spec.cc), plus
// its NCCL call (nccl/nccl_calls.cc) and the Communicator method that names
// it. A table: no state. Internal to comm/.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <tide/comm/types.h>
#include <tide/core/dtype.h>
#include <tide/core/shape.h>

#include "collective_kind.h"

namespace tide::detail {

/// One MPI call's arguments. `in == out` for an in-place call (the calls
/// pass MPI_IN_PLACE where MPI has it).
struct MpiArgs {
  const void* in = nullptr;
  void* out = nullptr;
  int count = 0;  // the spec's call_count
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  int root = 0;
  MPI_Comm comm = MPI_COMM_NULL;
};

/// One NCCL call's arguments, with NCCL's types erased (so that this header
/// builds without NCCL): `type` is an ncclDataType_t, `op` an ncclRedOp_t,
/// `comm` an ncclComm_t and `stream` a cudaStream_t. The call returns an
/// ncclResult_t.
struct NcclArgs {
  const void* in = nullptr;
  void* out = nullptr;
  std::size_t count = 0;  // the spec's call_count
  int type = 0;
  int op = 0;
  int root = 0;
  void* comm = nullptr;
  void* stream = nullptr;
};

struct CollectiveSpec {
  CollectiveKind kind;
  const char* name;
  /// Takes a ReduceOp (avg is a sum the runner then divides).
  bool reduces = false;
  /// Takes a root rank.
  bool rooted = false;
  /// The shape of the result for an input of shape `in` over `ranks` ranks;
  /// nullopt when the input has none (then shape_error says why). Null for
  /// the collectives without tensors.
  std::optional<Shape> (*result_shape)(const Shape& in, int ranks) = nullptr;
  /// Why an input of shape `in` has no result over `peers` ("this group of
  /// 3 ranks"): the message after "<name>: ".
  std::string (*shape_error)(const Shape& in, const std::string& peers) = nullptr;
  /// The element count MPI and NCCL are given for `count` input elements
  /// over `ranks` ranks (a block per rank for reduce_scatter).
  std::int64_t (*call_count)(std::int64_t count, int ranks) = nullptr;
  /// MPI's call works in place only: an out-of-place call first copies the
  /// input into the result.
  bool mpi_in_place_only = false;
  /// MPI's non-blocking call (small messages) and blocking call (large
  /// ones, see MpiGroup::collective); MPI_SUCCESS or an MPI error code.
  int (*mpi_start)(const MpiArgs&, MPI_Request*) = nullptr;
  int (*mpi_blocking)(const MpiArgs&) = nullptr;
  /// NCCL's call, for a collective on CUDA tensors (null for the kinds that
  /// have none). A build without NCCL refuses CUDA tensors before any call.
  const char* nccl_name = nullptr;
  int (*nccl)(const NcclArgs&) = nullptr;
};

/// The record of `kind`.
const CollectiveSpec& collective_spec(CollectiveKind kind);

}  // namespace tide::detail
