#include <cstring>

#include <tide/comm/communicator.h>
#include <tide/core/engine.h>

#include "collective_parts.h"
#include "host_collective.h"

namespace tide {

namespace detail {

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
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

void divide(void* data, std::int64_t n, DType t, int by) {
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(data);
    for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(by));
  });
}

Engine& engine_of(const Tensor& t, const char* name) {
  if (!t.defined())
    throw UndefinedTensorError(std::string(name) + ": use of an undefined tensor");
  Engine& e = t.engine();
  if (!t.device().is_cpu())
    throw DeviceError(std::string(name) + ": host collectives need a cpu tensor, got " + t.device().str());
  return e;
}

bool on_gpu(const Tensor& t) { return t.defined() && t.device().is_cuda(); }

DeviceCollective device_collective(Communicator::Impl& impl, const char* name, CollectiveKind kind, const Tensor& t,
                                   int op, int root, int devices) {
  if (!nccl_built())
    throw DeviceError(std::string(name) + ": a tensor on " + t.device().str() +
                      " needs NCCL, and this build of tide has none (built without CUDA, or libnccl was not found)");
  t.engine().check_device(t.device());
  DeviceCollective c;
  c.what.kind = kind;
  c.what.seq = impl.next_device_seq++;
  c.what.count = t.numel();
  c.what.dtype = t.dtype();
  c.what.op = static_cast<std::int8_t>(op);
  c.what.root = root;
  c.what.devices = devices;
  c.op = op >= 0 ? static_cast<ReduceOp>(op) : ReduceOp::sum;
  c.root = root;
  impl.checks.note_device(c.what);
  return c;
}

void check_reduce(const char* name, const Tensor& t, ReduceOp op) {
  const int v = static_cast<int>(op);
  if (v < static_cast<int>(ReduceOp::sum) || v > static_cast<int>(ReduceOp::min))
    throw ValueError(std::string(name) + ": ReduceOp " + std::to_string(v) + " is not one of sum, avg, max, min");
  if (op == ReduceOp::avg && !is_floating(t.dtype()))
    throw DTypeError(std::string(name) + ": avg needs a floating dtype, got " + dtype_name(t.dtype()));
}

void reduce_across_ranks(MpiGroup& mpi, const CollectiveId& what, void* data, std::int64_t n, DType dt, ReduceOp op) {
  if (!mpi.spans_ranks()) return;
  const int count = static_cast<int>(n);
  mpi.collective(
      what, static_cast<std::size_t>(n) * dtype_size(dt),
      [&](MPI_Request* req) { return MPI_Iallreduce(MPI_IN_PLACE, data, count, mpi_type(dt), mpi_op(op), mpi.comm, req); },
      [&] { return MPI_Allreduce(MPI_IN_PLACE, data, count, mpi_type(dt), mpi_op(op), mpi.comm); });
}

}  // namespace detail

using detail::CollectiveId;
using detail::CollectiveKind;
using detail::MpiGroup;
using detail::device_collective;
using detail::engine_of;
using detail::on_gpu;
using detail::check_reduce;
using detail::mpi_type;
using detail::mpi_op;
using detail::divide;
using detail::push_host_collective;

namespace {

/// The out-of-place collective `c` on CUDA tensor `t`: a new tensor of
/// `shape` on t's GPU.
Tensor on_gpu_out_of_place(const std::shared_ptr<Communicator::Impl>& impl, const detail::DeviceCollective& c,
                           const Tensor& t, const Shape& shape, Loc loc) {
  Tensor out = Tensor::empty(shape, t.dtype(), t.device());
  detail::push_device_collective(impl, c, t, out, loc);
  return out;
}

/// A copy of `t` made on the comm stream, for the out-of-place collectives.
Tensor copy_on_comm_stream(const Tensor& t, const char* name, Loc loc) {
  Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
  const std::size_t nbytes = t.nbytes();
  detail::push_comm(t.engine(), name, {t.storage()}, {out.storage()}, loc, [nbytes](const OpContext& c) {
    std::memcpy(c.writes[0]->data(), c.reads[0]->data(), nbytes);
  });
  return out;
}

}  // namespace

void Communicator::all_reduce_(Tensor& t, ReduceOp op, Loc loc) {
  live("all_reduce_");
  if (on_gpu(t)) {
    check_reduce("all_reduce_", t, op);
    detail::push_device_collective(
        impl_, device_collective(*impl_, "all_reduce_", CollectiveKind::all_reduce, t, static_cast<int>(op), -1), t, t,
        loc);
    return;
  }
  Engine& e = engine_of(t, "all_reduce_");
  check_reduce("all_reduce_", t, op);
  const std::int64_t n = t.numel();
  const DType dt = t.dtype();
  push_host_collective(impl_, e, "all_reduce",
                       impl_->begin(CollectiveKind::all_reduce, n, dt, static_cast<int>(op)), {t.storage()},
                       {t.storage()}, loc, [n, dt, op](const OpContext& c, MpiGroup& mpi, const CollectiveId& what) {
                         void* data = c.writes[0]->data();
                         detail::reduce_across_ranks(mpi, what, data, n, dt, op);
                         if (op == ReduceOp::avg && mpi.size > 1) divide(data, n, dt, mpi.size);
                       });
}

Tensor Communicator::all_reduce(const Tensor& t, ReduceOp op, Loc loc) {
  live("all_reduce");
  if (on_gpu(t)) {
    check_reduce("all_reduce", t, op);
    auto c = device_collective(*impl_, "all_reduce", CollectiveKind::all_reduce, t, static_cast<int>(op), -1);
    return on_gpu_out_of_place(impl_, c, t, t.shape(), loc);
  }
  engine_of(t, "all_reduce");
  check_reduce("all_reduce", t, op);
  Tensor out = copy_on_comm_stream(t, "all_reduce_copy", loc);
  all_reduce_(out, op, loc);
  return out;
}

namespace {
void check_root(const Communicator::Impl& impl, int root) {
  if (root < 0 || root >= impl.mpi.size)
    throw ValueError("broadcast: root " + std::to_string(root) + " is not a rank of " +
                     (impl.parent ? "this " + impl.peers() : "a world of " + std::to_string(impl.mpi.size)));
}
}  // namespace

void Communicator::broadcast_(Tensor& t, int root, Loc loc) {
  live("broadcast_");
  if (on_gpu(t)) {
    check_root(*impl_, root);
    detail::push_device_collective(
        impl_, device_collective(*impl_, "broadcast_", CollectiveKind::broadcast, t, -1, root), t, t, loc);
    return;
  }
  Engine& e = engine_of(t, "broadcast_");
  check_root(*impl_, root);
  const std::int64_t n = t.numel();
  const DType dt = t.dtype();
  push_host_collective(impl_, e, "broadcast", impl_->begin(CollectiveKind::broadcast, n, dt, -1, root),
                       {t.storage()}, {t.storage()}, loc,
                       [n, dt, root](const OpContext& c, MpiGroup& mpi, const CollectiveId& what) {
                         if (!mpi.spans_ranks()) return;
                         void* data = c.writes[0]->data();
                         const int count = static_cast<int>(n);
                         mpi.collective(
                             what, static_cast<std::size_t>(n) * dtype_size(dt),
                             [&](MPI_Request* req) { return MPI_Ibcast(data, count, mpi_type(dt), root, mpi.comm, req); },
                             [&] { return MPI_Bcast(data, count, mpi_type(dt), root, mpi.comm); });
                       });
}

Tensor Communicator::broadcast(const Tensor& t, int root, Loc loc) {
  live("broadcast");
  if (on_gpu(t)) {
    check_root(*impl_, root);
    auto c = device_collective(*impl_, "broadcast", CollectiveKind::broadcast, t, -1, root);
    return on_gpu_out_of_place(impl_, c, t, t.shape(), loc);
  }
  engine_of(t, "broadcast");
  check_root(*impl_, root);
  Tensor out = copy_on_comm_stream(t, "broadcast_copy", loc);
  broadcast_(out, root, loc);
  return out;
}

Tensor Communicator::all_gather(const Tensor& t, Loc loc) {
  live("all_gather");
  if (!t.defined()) throw UndefinedTensorError("all_gather: use of an undefined tensor");
  Shape shape;
  shape.push_back(impl_->mpi.size);
  for (auto d : t.shape()) shape.push_back(d);
  if (on_gpu(t)) {
    auto c = device_collective(*impl_, "all_gather", CollectiveKind::all_gather, t, -1, -1);
    return on_gpu_out_of_place(impl_, c, t, shape, loc);
  }
  Engine& e = engine_of(t, "all_gather");
  Tensor out = Tensor::empty(shape, t.dtype(), t.device());
  const std::int64_t n = t.numel();
  const DType dt = t.dtype();
  push_host_collective(impl_, e, "all_gather", impl_->begin(CollectiveKind::all_gather, n, dt), {t.storage()},
                       {out.storage()}, loc, [n, dt](const OpContext& c, MpiGroup& mpi, const CollectiveId& what) {
                         const void* in = c.reads[0]->data();
                         void* out = c.writes[0]->data();
                         if (!mpi.spans_ranks()) {
                           std::memcpy(out, in, static_cast<std::size_t>(n) * dtype_size(dt));
                           return;
                         }
                         const int count = static_cast<int>(n);
                         const MPI_Datatype type = mpi_type(dt);
                         mpi.collective(
                             what, static_cast<std::size_t>(n) * dtype_size(dt) * static_cast<std::size_t>(mpi.size),
                             [&](MPI_Request* req) { return MPI_Iallgather(in, count, type, out, count, type, mpi.comm, req); },
                             [&] { return MPI_Allgather(in, count, type, out, count, type, mpi.comm); });
                       });
  return out;
}

Tensor Communicator::reduce_scatter(const Tensor& t, ReduceOp op, Loc loc) {
  live("reduce_scatter");
  if (!t.defined()) throw UndefinedTensorError("reduce_scatter: use of an undefined tensor");
  check_reduce("reduce_scatter", t, op);
  const int size = impl_->mpi.size;
  if (t.ndim() == 0 || t.shape()[0] % size != 0)
    throw ShapeError("reduce_scatter: the first axis of " + t.shape().str() + " must split evenly over " +
                     (impl_->parent ? "this " : "") + impl_->peers());
  Shape shape;
  shape.push_back(t.shape()[0] / size);
  for (int i = 1; i < t.ndim(); ++i) shape.push_back(t.shape()[i]);
  if (on_gpu(t)) {
    auto c = device_collective(*impl_, "reduce_scatter", CollectiveKind::reduce_scatter, t, static_cast<int>(op), -1);
    return on_gpu_out_of_place(impl_, c, t, shape, loc);
  }
  Engine& e = engine_of(t, "reduce_scatter");
  Tensor out = Tensor::empty(shape, t.dtype(), t.device());
  const std::int64_t block = shape.numel();
  const DType dt = t.dtype();
  push_host_collective(
      impl_, e, "reduce_scatter",
      impl_->begin(CollectiveKind::reduce_scatter, t.numel(), dt, static_cast<int>(op)), {t.storage()},
      {out.storage()}, loc, [block, dt, op](const OpContext& c, MpiGroup& mpi, const CollectiveId& what) {
        void* out_data = c.writes[0]->data();
        const void* in = c.reads[0]->data();
        if (!mpi.spans_ranks()) {
          std::memcpy(out_data, in, static_cast<std::size_t>(block) * dtype_size(dt));
          return;
        }
        const int count = static_cast<int>(block);
        mpi.collective(
            what, static_cast<std::size_t>(block) * dtype_size(dt) * static_cast<std::size_t>(mpi.size),
            [&](MPI_Request* req) {
              return MPI_Ireduce_scatter_block(in, out_data, count, mpi_type(dt), mpi_op(op), mpi.comm, req);
            },
            [&] { return MPI_Reduce_scatter_block(in, out_data, count, mpi_type(dt), mpi_op(op), mpi.comm); });
        if (op == ReduceOp::avg) divide(out_data, block, dt, mpi.size);
      });
  return out;
}

void Communicator::barrier(Loc loc) {
  live("barrier");
  Engine& e = current_engine();
  auto token = e.allocate(cpu(0), 1);
  push_host_collective(impl_, e, "barrier", impl_->begin(CollectiveKind::barrier), {}, {token}, loc,
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
