// The all-reduce over several devices of one rank, then over ranks.
#include <algorithm>
#include <type_traits>
#include <cstring>

#include <tide/comm/communicator.h>
#include <tide/core/engine.h>

#include "collective_parts.h"
#include "host_collective.h"

namespace tide {

using detail::CollectiveId;
using detail::CollectiveKind;
using detail::MpiGroup;
using detail::check_reduce;
using detail::device_collective;
using detail::engine_of;
using detail::on_gpu;
using detail::push_host_collective;

namespace {

/// out = op over the op's reads (elementwise); with `accumulate`, out takes
/// part too, and is also the last read (listed so that its poison stops the
/// op), which is not reduced again. avg sums: the cross-rank op divides.
void reduce_reads(const OpContext& c, std::int64_t n, DType dt, ReduceOp op, bool accumulate) {
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* out = c.out<T>(0);
    int first = 0;
    if (!accumulate) {
      if (n) std::memcpy(out, c.in<T>(0), static_cast<std::size_t>(n) * sizeof(T));
      first = 1;
    }
    const int last = accumulate ? c.nreads - 1 : c.nreads;
    for (int r = first; r < last; ++r) {
      const T* in = c.in<T>(r);
      switch (op) {
        case ReduceOp::sum:
        case ReduceOp::avg:
          // Integer sums wrap around (unsigned arithmetic), as the
          // collectives' and every integer op's do.
          for (std::int64_t i = 0; i < n; ++i) {
            if constexpr (std::is_integral_v<T>)
              out[i] = static_cast<T>(static_cast<std::make_unsigned_t<T>>(out[i]) +
                                      static_cast<std::make_unsigned_t<T>>(in[i]));
            else out[i] += in[i];
          }
          break;
        case ReduceOp::max:
          for (std::int64_t i = 0; i < n; ++i) out[i] = std::max(out[i], in[i]);
          break;
        case ReduceOp::min:
          for (std::int64_t i = 0; i < n; ++i) out[i] = std::min(out[i], in[i]);
          break;
      }
    }
  });
}

/// Throws before anything is queued when the tensors cannot be reduced
/// together; returns their engine.
Engine& check_per_device(const std::vector<Tensor>& ts, ReduceOp op) {
  const char* name = "all_reduce_";
  if (ts.empty()) throw ValueError("all_reduce_: an empty list of tensors (one per device is expected)");
  if (!ts[0].defined()) throw UndefinedTensorError("all_reduce_: tensor 0 is undefined");
  Engine& e = on_gpu(ts[0]) ? ts[0].engine() : engine_of(ts[0], name);
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    const std::string which = "all_reduce_: tensor " + std::to_string(i);
    if (!t.defined()) throw UndefinedTensorError(which + " is undefined");
    if (on_gpu(t) != on_gpu(ts[0]))
      throw DeviceError(which + " is on " + t.device().str() + ", tensor 0 on " + ts[0].device().str() +
                        ": all on cpu devices, or all on GPUs");
    if (!on_gpu(t)) engine_of(t, name);  // on a cpu device
    if (&t.engine() != &e) throw UsageError(which + " belongs to another engine than tensor 0");
    for (std::size_t j = 0; j < i; ++j)
      if (ts[j].device() == t.device())
        throw DeviceError(which + " is on " + t.device().str() + " like tensor " + std::to_string(j) +
                          ": one tensor per device");
    if (t.shape() != ts[0].shape())
      throw ShapeError(which + " has shape " + t.shape().str() + ", tensor 0 has " + ts[0].shape().str());
    if (t.dtype() != ts[0].dtype())
      throw DTypeError(which + " is " + dtype_name(t.dtype()) + ", tensor 0 is " + dtype_name(ts[0].dtype()));
  }
  check_reduce(name, ts[0], op);
  return e;
}

}  // namespace

void Communicator::all_reduce_(std::vector<Tensor>& per_device, ReduceOp op, Loc loc) {
  live("all_reduce_");
  Engine& e = check_per_device(per_device, op);
  if (per_device.size() == 1) {
    all_reduce_(per_device[0], op, loc);
    return;
  }
  if (on_gpu(per_device[0])) {
    const CollectiveId what = device_collective(*impl_, "all_reduce_", CollectiveKind::all_reduce, per_device[0], op,
                                                -1, static_cast<int>(per_device.size()));
    detail::push_device_all_reduce(impl_, what, per_device, loc);
    return;
  }
  const std::int64_t n = per_device[0].numel();
  const DType dt = per_device[0].dtype();
  const std::size_t nbytes = static_cast<std::size_t>(n) * dtype_size(dt);
  const int ntensors = static_cast<int>(per_device.size());
  constexpr int kChunk = StorageList::kInline;
  auto buffer = e.allocate(cpu(0), nbytes);

  // 1. Reduce this rank's tensors into the buffer: the first op takes up to
  // kChunk tensors, the later ones kChunk - 1 and the buffer (so that a
  // failed tensor's poison in the buffer is not washed out by a later op).
  // Each op reads its tensors, so it waits for their producers on their own
  // devices' streams.
  for (int first = 0; first < ntensors;) {
    const bool accumulate = first > 0;
    const int last = std::min(first + (accumulate ? kChunk - 1 : kChunk), ntensors);
    StorageList reads;
    for (int i = first; i < last; ++i) reads.add(per_device[static_cast<std::size_t>(i)].storage());
    if (accumulate) reads.add(buffer);
    detail::push_comm(e, "all_reduce_local", std::move(reads), {buffer}, loc,
               [n, dt, op, accumulate](const OpContext& c) { reduce_reads(c, n, dt, op, accumulate); });
    first = last;
  }

  // 2. Across ranks, in place in the buffer. It reads the buffer too, so
  // that a failed tensor's poison reaches the results (like a one-tensor
  // all-reduce, it is then skipped).
  push_host_collective(impl_, e, "all_reduce", impl_->begin(CollectiveKind::all_reduce, n, dt, op, -1, ntensors),
                       {buffer}, {buffer}, loc, [nbytes](const OpContext& c, MpiGroup& mpi, const CollectiveId& what) {
                         void* data = c.writes[0]->data();
                         detail::run_host_collective(detail::collective_spec(CollectiveKind::all_reduce), mpi, what,
                                                     data, data, nbytes, nbytes);
                       });

  // 3. Copy the result back to every tensor, at most kChunk per op.
  for (int first = 0; first < ntensors; first += kChunk) {
    StorageList writes;
    for (int i = first; i < std::min(first + kChunk, ntensors); ++i)
      writes.add(per_device[static_cast<std::size_t>(i)].storage());
    detail::push_comm(e, "all_reduce_write_back", {buffer}, std::move(writes), loc, [nbytes](const OpContext& c) {
      if (nbytes == 0) return;
      for (int w = 0; w < c.nwrites; ++w) std::memcpy(c.writes[w]->data(), c.reads[0]->data(), nbytes);
    });
  }
}

}  // namespace tide
