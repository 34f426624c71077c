#include "collective_spec.h"

#include <tide/core/assert.h>

#include "nccl_calls.h"

namespace tide::detail {

namespace {

const void* send_buffer(const MpiArgs& a) { return a.in == a.out ? MPI_IN_PLACE : a.in; }

std::optional<Shape> same_shape(const Shape& in, int) { return in; }
std::int64_t same_count(std::int64_t count, int) { return count; }

// all_gather: [ranks, ...input].
std::optional<Shape> stacked(const Shape& in, int ranks) {
  Shape s;
  s.push_back(ranks);
  for (auto d : in) s.push_back(d);
  return s;
}

// reduce_scatter: the input's first axis split in `ranks` blocks, one each.
std::optional<Shape> first_axis_split(const Shape& in, int ranks) {
  if (in.ndim() == 0 || ranks <= 0 || in[0] % ranks != 0) return std::nullopt;
  Shape s;
  s.push_back(in[0] / ranks);
  for (int i = 1; i < in.ndim(); ++i) s.push_back(in[i]);
  return s;
}
std::string first_axis_split_error(const Shape& in, const std::string& peers) {
  return "the first axis of " + in.str() + " must split evenly over " + peers;
}
std::int64_t block_count(std::int64_t count, int ranks) { return ranks > 0 ? count / ranks : count; }

const CollectiveSpec kSpecs[] = {
    {.kind = CollectiveKind::all_reduce,
     .name = "all_reduce",
     .reduces = true,
     .result_shape = same_shape,
     .call_count = same_count,
     .mpi_start = [](const MpiArgs& a, MPI_Request* r) {
       return MPI_Iallreduce(send_buffer(a), a.out, a.count, a.type, a.op, a.comm, r);
     },
     .mpi_blocking = [](const MpiArgs& a) {
       return MPI_Allreduce(send_buffer(a), a.out, a.count, a.type, a.op, a.comm);
     },
     .nccl_name = "ncclAllReduce",
     .nccl = nccl_all_reduce},
    {.kind = CollectiveKind::broadcast,
     .name = "broadcast",
     .rooted = true,
     .result_shape = same_shape,
     .call_count = same_count,
     .mpi_in_place_only = true,
     .mpi_start = [](const MpiArgs& a, MPI_Request* r) {
       return MPI_Ibcast(a.out, a.count, a.type, a.root, a.comm, r);
     },
     .mpi_blocking = [](const MpiArgs& a) { return MPI_Bcast(a.out, a.count, a.type, a.root, a.comm); },
     .nccl_name = "ncclBroadcast",
     .nccl = nccl_broadcast},
    {.kind = CollectiveKind::all_gather,
     .name = "all_gather",
     .result_shape = stacked,
     .call_count = same_count,
     .mpi_start = [](const MpiArgs& a, MPI_Request* r) {
       return MPI_Iallgather(a.in, a.count, a.type, a.out, a.count, a.type, a.comm, r);
     },
     .mpi_blocking = [](const MpiArgs& a) {
       return MPI_Allgather(a.in, a.count, a.type, a.out, a.count, a.type, a.comm);
     },
     .nccl_name = "ncclAllGather",
     .nccl = nccl_all_gather},
    {.kind = CollectiveKind::reduce_scatter,
     .name = "reduce_scatter",
     .reduces = true,
     .result_shape = first_axis_split,
     .shape_error = first_axis_split_error,
     .call_count = block_count,
     .mpi_start = [](const MpiArgs& a, MPI_Request* r) {
       return MPI_Ireduce_scatter_block(a.in, a.out, a.count, a.type, a.op, a.comm, r);
     },
     .mpi_blocking = [](const MpiArgs& a) {
       return MPI_Reduce_scatter_block(a.in, a.out, a.count, a.type, a.op, a.comm);
     },
     .nccl_name = "ncclReduceScatter",
     .nccl = nccl_reduce_scatter},
    // No tensors: their runs are their own (communicator.cc, clock.cc,
    // nccl/); the record names them and numbers them like the others.
    {.kind = CollectiveKind::barrier, .name = "barrier"},
    {.kind = CollectiveKind::split, .name = "split"},
    {.kind = CollectiveKind::nccl_init, .name = "nccl_init"},
    {.kind = CollectiveKind::clock, .name = "clock_offset"},
};

}  // namespace

const CollectiveSpec& collective_spec(CollectiveKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  if (i >= std::size(kSpecs)) TIDE_UNREACHABLE("a collective kind with no record");
  const CollectiveSpec& s = kSpecs[i];
  if (s.kind != kind) TIDE_UNREACHABLE("the collective records are out of the kinds' order");
  return s;
}

const char* collective_kind_name(CollectiveKind kind) { return collective_spec(kind).name; }

}  // namespace tide::detail
