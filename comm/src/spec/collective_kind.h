// The kinds of collective, and their names: what the passive records
// (health/) need of a collective without its MPI and NCCL calls. Each kind
// has a record in collective_spec.h. Internal to comm/.
#pragma once

#include <cstdint>

namespace tide::detail {

enum class CollectiveKind : std::uint8_t {
  all_reduce,
  broadcast,
  all_gather,
  reduce_scatter,
  barrier,
  split,
  nccl_init,  // the host side of creating a communicator's NCCL communicator for one GPU
  clock,      // clock_offset(): ping-pong messages to rank 0
};

/// "all_reduce", "broadcast", ...: the name in the kind's record.
const char* collective_kind_name(CollectiveKind kind);

}  // namespace tide::detail
