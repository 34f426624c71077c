// The collectives of one tensor, each pushed from its record (spec/): the
// frontend checks the arguments and forks once, to NCCL for a CUDA tensor or
// to MPI on the comm thread for a host tensor.
#include <algorithm>
#include <cstring>

#include <tide/comm/communicator.h>
#include <tide/core/engine.h>

#include "collective_parts.h"
#include "combine.h"
#include "host_collective.h"

namespace tide {

namespace detail {

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i64: return MPI_INT64_T;
    case DType::b8: return MPI_UINT8_T;  // moved, never reduced (check_reduce)
    case DType::i32: break;
  }
  return MPI_INT;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::sum:
    case ReduceOp::avg: break;
  }
  return MPI_SUM;
}

namespace {

/// data[i] /= by, for `n` elements of type `t`.
void divide(void* data, std::int64_t n, DType t, int by) {
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(data);
    for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(by));
  });
}

}  // namespace

Engine& engine_of(const Tensor& t, const char* name) {
  if (!t.defined())
    throw UndefinedTensorError(std::string(name) + ": use of an undefined tensor");
  Engine& e = t.engine();
  if (!t.device().is_cpu())
    throw DeviceError(std::string(name) + ": host collectives need a cpu tensor, got " + t.device().str());
  return e;
}

bool on_gpu(const Tensor& t) { return t.defined() && t.device().is_cuda(); }

CollectiveId device_collective(Communicator::Impl& impl, const char* name, CollectiveKind kind, const Tensor& t,
                               std::optional<ReduceOp> op, int root, int devices) {
  if (!nccl_built())
    throw DeviceError(std::string(name) + ": a tensor on " + t.device().str() +
                      " needs NCCL, and this build of tide has none (built without CUDA, or libnccl was not found)");
  t.engine().check_device(t.device());
  CollectiveId what;
  what.kind = kind;
  what.seq = impl.next_device_seq++;
  what.count = t.numel();
  what.dtype = t.dtype();
  what.op = op;
  what.root = root;
  what.devices = devices;
  impl.checks.note_device(what);
  return what;
}

void check_reduce(const char* name, const Tensor& t, ReduceOp op) {
  const int v = static_cast<int>(op);
  if (v < static_cast<int>(ReduceOp::sum) || v > static_cast<int>(ReduceOp::min))
    throw ValueError(std::string(name) + ": ReduceOp " + std::to_string(v) + " is not one of sum, avg, max, min");
  if (t.defined() && t.dtype() == DType::b8)
    throw DTypeError(std::string(name) + ": a bool tensor is not reduced; convert it to i32 first");
  if (op == ReduceOp::avg && !is_floating(t.dtype()))
    throw DTypeError(std::string(name) + ": avg needs a floating dtype, got " + dtype_name(t.dtype()));
}

void run_host_collective(const CollectiveSpec& spec, MpiGroup& mpi, const CollectiveId& what, const void* in,
                         void* out, std::size_t in_bytes, std::size_t out_bytes) {
  if (mpi.spans_ranks() && (spec.kind == CollectiveKind::all_reduce || spec.kind == CollectiveKind::all_gather) &&
      mpi.exchanges(in_bytes)) {
    // Small enough for one round of messages, which is the whole collective
    // (MpiGroup::exchange).
    const unsigned char* const* parts = mpi.exchange_collective(what, in, in_bytes);
    if (spec.kind == CollectiveKind::all_reduce) {
      combine_in_rank_order(out, parts, mpi.size, what.count, what.dtype, *what.op);
    } else if (in_bytes) {
      for (int r = 0; r < mpi.size; ++r)
        std::memcpy(static_cast<unsigned char*>(out) + static_cast<std::size_t>(r) * in_bytes, parts[r], in_bytes);
    }
  } else if (mpi.spans_ranks()) {
    if (spec.mpi_in_place_only && in != out && out_bytes) std::memcpy(out, in, out_bytes);
    MpiArgs a;
    a.in = spec.mpi_in_place_only ? out : in;
    a.out = out;
    a.count = static_cast<int>(spec.call_count(what.count, mpi.size));  // Impl::begin checked that it fits
    a.type = mpi_type(what.dtype);
    a.op = what.op ? mpi_op(*what.op) : MPI_OP_NULL;
    a.root = what.root;
    a.comm = mpi.comm;
    mpi.collective(
        what, std::max(in_bytes, out_bytes), [&](MPI_Request* req) { return spec.mpi_start(a, req); },
        [&] { return spec.mpi_blocking(a); });
  } else if (in != out && out_bytes) {
    std::memcpy(out, in, out_bytes);  // over one rank, every collective's result is its input
  }
  const int by = std::max(what.devices, 1) * (mpi.spans_ranks() ? mpi.size : 1);
  if (what.op == ReduceOp::avg && by > 1)
    divide(out, static_cast<std::int64_t>(out_bytes / dtype_size(what.dtype)), what.dtype, by);
}

}  // namespace detail

using detail::CollectiveId;
using detail::CollectiveKind;
using detail::CollectiveSpec;
using detail::MpiGroup;

namespace {

void check_root(const Communicator::Impl& impl, const char* name, int root) {
  if (root < 0 || root >= impl.mpi.size)
    throw ValueError(std::string(name) + ": root " + std::to_string(root) + " is not a rank of " +
                     (impl.parent ? "this " + impl.peers() : "a world of " + std::to_string(impl.mpi.size)));
}

/// Collective `kind` of `t`, called as `name` (the method's name, for
/// errors): checks the arguments its record asks for, then pushes it, on
/// t's GPU (NCCL) or on the comm thread (MPI). Its result is `t` itself when
/// `in_place`, a new tensor on t's device otherwise.
Tensor push_collective(const std::shared_ptr<Communicator::Impl>& impl, CollectiveKind kind, const char* name,
                       const Tensor& t, bool in_place, std::optional<ReduceOp> op, int root, Loc loc) {
  const CollectiveSpec& spec = detail::collective_spec(kind);
  if (!t.defined()) throw UndefinedTensorError(std::string(name) + ": use of an undefined tensor");
  // A host tensor's engine and device first (a tensor of a destroyed
  // engine is a UsageError whatever the other arguments), then the rest.
  Engine* host = detail::on_gpu(t) ? nullptr : &detail::engine_of(t, name);
  if (spec.reduces) detail::check_reduce(name, t, *op);
  if (spec.rooted) check_root(*impl, spec.name, root);
  const std::optional<Shape> shape = spec.result_shape(t.shape(), impl->mpi.size);
  if (!shape)
    throw ShapeError(std::string(name) + ": " +
                     spec.shape_error(t.shape(), (impl->parent ? "this " : "") + impl->peers()));
  if (!host) {
    const CollectiveId what = detail::device_collective(*impl, name, kind, t, op, root);
    Tensor out = in_place ? t : Tensor::empty(*shape, t.dtype(), t.device());
    detail::push_device_collective(impl, what, t, out, loc);
    return out;
  }
  Tensor out = in_place ? t : Tensor::empty(*shape, t.dtype(), t.device());
  detail::push_host_collective(
      impl, *host, spec.name, impl->begin(kind, t.numel(), t.dtype(), op, root), {t.storage()}, {out.storage()}, loc,
      [spec = &spec, in_bytes = t.nbytes(), out_bytes = out.nbytes()](const OpContext& c, MpiGroup& mpi,
                                                                      const CollectiveId& what) {
        detail::run_host_collective(*spec, mpi, what, c.reads[0]->data(), c.writes[0]->data(), in_bytes, out_bytes);
      });
  return out;
}

}  // namespace

void Communicator::all_reduce_(Tensor& t, ReduceOp op, Loc loc) {
  push_collective(live("all_reduce_"), CollectiveKind::all_reduce, "all_reduce_", t, true, op, -1, loc);
}

Tensor Communicator::all_reduce(const Tensor& t, ReduceOp op, Loc loc) {
  return push_collective(live("all_reduce"), CollectiveKind::all_reduce, "all_reduce", t, false, op, -1, loc);
}

void Communicator::broadcast_(Tensor& t, int root, Loc loc) {
  push_collective(live("broadcast_"), CollectiveKind::broadcast, "broadcast_", t, true, std::nullopt, root, loc);
}

Tensor Communicator::broadcast(const Tensor& t, int root, Loc loc) {
  return push_collective(live("broadcast"), CollectiveKind::broadcast, "broadcast", t, false, std::nullopt, root, loc);
}

Tensor Communicator::all_gather(const Tensor& t, Loc loc) {
  return push_collective(live("all_gather"), CollectiveKind::all_gather, "all_gather", t, false, std::nullopt, -1, loc);
}

Tensor Communicator::reduce_scatter(const Tensor& t, ReduceOp op, Loc loc) {
  return push_collective(live("reduce_scatter"), CollectiveKind::reduce_scatter, "reduce_scatter", t, false, op, -1,
                         loc);
}

void Communicator::barrier(Loc loc) {
  live("barrier");
  Engine& e = current_engine();
  auto token = e.allocate(cpu(0), 1);
  detail::push_host_collective(impl_, e, "barrier", impl_->begin(CollectiveKind::barrier), {}, {token}, loc,
                               [](const OpContext&, MpiGroup& mpi, const CollectiveId& what) {
                                 if (!mpi.spans_ranks()) return;
                                 MPI_Request req;
                                 if (int rc = MPI_Ibarrier(mpi.comm, &req); rc != MPI_SUCCESS)
                                   mpi.mpi_failed(rc, "MPI_Ibarrier", what);
                                 mpi.wait(req, what);
                                 detail::liveness_leave();
                               });
  e.wait_for(*token, "barrier", loc);
}

}  // namespace tide
