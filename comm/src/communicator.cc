#include <tide/comm/communicator.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <tide/core/engine.h>

#include "comm_impl.h"
#include "device_collectives.h"
#include "mpi_check.h"
#include "push_comm.h"

namespace tide {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

CommOptions CommOptions::from_env() {
  CommOptions o;
  if (const char* v = std::getenv("TIDE_COMM_TIMEOUT"); v && *v) {
    char* end = nullptr;
    double s = std::strtod(v, &end);
    if (*end != '\0' || !(s > 0) || !std::isfinite(s))
      throw ValueError(std::string("TIDE_COMM_TIMEOUT=") + v + ": expected a positive number of seconds");
    o.timeout_s = s;
  }
  if (const char* v = std::getenv("TIDE_DESYNC_CHECK"); v && *v) {
    const std::string s = v;
    if (s != "0" && s != "1") throw ValueError("TIDE_DESYNC_CHECK=" + s + ": expected 0 or 1");
    o.desync_check = s == "1";
  }
  return o;
}

using detail::CollectiveId;
using detail::CollectiveKind;

namespace {

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

/// The frontend half of a collective on a CUDA tensor: refused at once in a
/// build without NCCL; numbered apart from the host collectives.
detail::DeviceCollective device_collective(Communicator::Impl& impl, const char* name, CollectiveKind kind,
                                           const Tensor& t, int op, int root, int devices = 0) {
  if (!detail::nccl_built())
    throw DeviceError(std::string(name) + ": a tensor on " + t.device().str() +
                      " needs NCCL, and this build of tide has none (built without CUDA, or libnccl was not found)");
  t.engine().check_device(t.device());
  detail::DeviceCollective c;
  c.what.kind = kind;
  c.what.seq = impl.next_device_seq++;
  c.what.count = t.numel();
  c.what.dtype = t.dtype();
  c.what.op = static_cast<std::int8_t>(op);
  c.what.root = root;
  c.what.devices = devices;
  c.op = op >= 0 ? static_cast<ReduceOp>(op) : ReduceOp::sum;
  c.root = root;
  impl.note_device(c.what);
  return c;
}

void check_reduce(const char* name, const Tensor& t, ReduceOp op) {
  if (op == ReduceOp::avg && !is_floating(t.dtype()))
    throw DTypeError(std::string(name) + ": avg needs a floating dtype, got " + dtype_name(t.dtype()));
}

/// The cross-rank part of an in-place all-reduce, on the comm thread: `data`
/// holds `n` elements; avg is summed here and divided by the caller.
void reduce_across_ranks(Communicator::Impl& impl, const CollectiveId& what, void* data, std::int64_t n, DType dt,
                         ReduceOp op) {
  impl.check_usable();
  if (!impl.mpi || impl.size == 1) return;
  const int count = static_cast<int>(n);
  impl.collective(
      what, static_cast<std::size_t>(n) * dtype_size(dt),
      [&](MPI_Request* req) {
        return MPI_Iallreduce(MPI_IN_PLACE, data, count, mpi_type(dt), mpi_op(op), impl.comm, req);
      },
      [&] { return MPI_Allreduce(MPI_IN_PLACE, data, count, mpi_type(dt), mpi_op(op), impl.comm); });
}

}  // namespace

Communicator::Communicator(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Communicator::~Communicator() {
  // A group's MPI communicator is freed by an op on the comm stream, after
  // the group's queued collectives and without racing the comm thread's MPI
  // calls. The world's is freed by ~Impl: the Runtime drops it only after
  // the engine has drained. Without an engine no comm thread runs, so ~Impl
  // may free it too.
  Engine* e = current_engine_or_null();
  if (e && !impl_->nccl.empty()) {
    try {
      detail::release_device_comms(impl_, *e);
    } catch (...) {
      // Not the frontend thread, say: the last reference releases them.
    }
  }
  if (!impl_->mpi || !impl_->parent || impl_->comm == MPI_COMM_NULL) return;
  if (!e) return;
  impl_->free_in_destructor = false;  // from here on, left to MPI_Finalize unless the op runs
  try {
    OpDesc op;
    op.name = "comm_free";
    op.device = cpu(0);
    op.stream = static_cast<int>(StreamKind::comm);
    op.fn = [impl = impl_](const OpContext&) {
      if (impl->is_broken()) return;
      impl->finish_checks();  // every member frees the group, so checks in flight complete
      if (impl->check_comm != MPI_COMM_NULL) TIDE_MPI_CHECK(MPI_Comm_free(&impl->check_comm));
      if (impl->recheck_comm != MPI_COMM_NULL) TIDE_MPI_CHECK(MPI_Comm_free(&impl->recheck_comm));
      TIDE_MPI_CHECK(MPI_Comm_free(&impl->comm));
    };
    e->push(std::move(op));
  } catch (...) {
    // Not the frontend thread, say: the handle is dropped without freeing.
  }
}

std::shared_ptr<Communicator> Communicator::local(const CommOptions& o) {
  auto impl = std::make_shared<Impl>();
  impl->options = o;
  return std::shared_ptr<Communicator>(new Communicator(std::move(impl)));
}

std::shared_ptr<Communicator> Communicator::mpi_world(const CommOptions& o) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw UsageError("Communicator::mpi_world needs MPI initialised (use tide::Runtime::init)");
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_SERIALIZED)
    throw UsageError("MPI provides too low a thread level: tide makes MPI calls from its comm thread "
                     "and needs MPI_THREAD_SERIALIZED");
  auto impl = std::make_shared<Impl>();
  impl->options = o;
  impl->mpi = true;
  TIDE_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &impl->comm));
  // Errors come back as return codes (and break the communicator, naming
  // the collective) instead of ending the job inside MPI with no context.
  // Groups and the desync check's duplicate inherit this.
  TIDE_MPI_CHECK(MPI_Comm_set_errhandler(impl->comm, MPI_ERRORS_RETURN));
  TIDE_MPI_CHECK(MPI_Comm_rank(impl->comm, &impl->rank));
  TIDE_MPI_CHECK(MPI_Comm_size(impl->comm, &impl->size));
  impl->world_rank = impl->rank;
  impl->world_ranks.resize(static_cast<std::size_t>(impl->size));
  for (int r = 0; r < impl->size; ++r) impl->world_ranks[static_cast<std::size_t>(r)] = r;
  detail::liveness_init(impl->comm);
  impl->enable_checks();
  return std::shared_ptr<Communicator>(new Communicator(std::move(impl)));
}

int Communicator::rank() const { return impl_->rank; }
int Communicator::size() const { return impl_->size; }
bool Communicator::uses_mpi() const { return impl_->mpi; }
bool Communicator::broken() const { return impl_->is_broken(); }
std::string Communicator::failure() const { return impl_->failure(); }
bool Communicator::nccl_built() { return detail::nccl_built(); }

namespace {

using detail::push_comm;

/// A copy of `t` made on the comm stream, for the out-of-place collectives.
Tensor copy_on_comm_stream(const Tensor& t, const char* name, Loc loc) {
  Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
  const std::size_t nbytes = t.nbytes();
  push_comm(t.engine(), name, {t.storage()}, {out.storage()}, loc, [nbytes](const OpContext& c) {
    std::memcpy(c.writes[0]->data(), c.reads[0]->data(), nbytes);
  });
  return out;
}

}  // namespace

void Communicator::all_reduce_(Tensor& t, ReduceOp op, Loc loc) {
  if (on_gpu(t)) {
    check_reduce("all_reduce_", t, op);
    detail::push_device_collective(
        impl_, device_collective(*impl_, "all_reduce_", CollectiveKind::all_reduce, t, static_cast<int>(op), -1), t, t,
        loc);
    return;
  }
  Engine& e = engine_of(t, "all_reduce_");
  check_reduce("all_reduce_", t, op);
  const CollectiveId what = impl_->begin(CollectiveKind::all_reduce, t.numel(), t.dtype(), static_cast<int>(op));
  auto impl = impl_;
  const std::int64_t n = t.numel();
  const DType dt = t.dtype();
  push_comm(e, "all_reduce", {t.storage()}, {t.storage()}, loc,
                  [impl, what, n, dt, op](const OpContext& c) {
                    impl->running(what);
                    void* data = c.writes[0]->data();
                    reduce_across_ranks(*impl, what, data, n, dt, op);
                    if (op == ReduceOp::avg && impl->size > 1) divide(data, n, dt, impl->size);
                  });
}

Tensor Communicator::all_reduce(const Tensor& t, ReduceOp op, Loc loc) {
  if (on_gpu(t)) {
    check_reduce("all_reduce", t, op);
    auto c = device_collective(*impl_, "all_reduce", CollectiveKind::all_reduce, t, static_cast<int>(op), -1);
    Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
    detail::push_device_collective(impl_, c, t, out, loc);
    return out;
  }
  engine_of(t, "all_reduce");
  check_reduce("all_reduce", t, op);
  Tensor out = copy_on_comm_stream(t, "all_reduce_copy", loc);
  all_reduce_(out, op, loc);
  return out;
}

namespace {
void check_root(const Communicator::Impl& impl, int root) {
  if (root < 0 || root >= impl.size)
    throw ValueError("broadcast: root " + std::to_string(root) + " is not a rank of " +
                     (impl.parent ? "this " + impl.peers() : "a world of " + std::to_string(impl.size)));
}
}  // namespace

void Communicator::broadcast_(Tensor& t, int root, Loc loc) {
  if (on_gpu(t)) {
    check_root(*impl_, root);
    detail::push_device_collective(
        impl_, device_collective(*impl_, "broadcast_", CollectiveKind::broadcast, t, -1, root), t, t, loc);
    return;
  }
  Engine& e = engine_of(t, "broadcast_");
  check_root(*impl_, root);
  const CollectiveId what = impl_->begin(CollectiveKind::broadcast, t.numel(), t.dtype(), -1, root);
  auto impl = impl_;
  const std::int64_t n = t.numel();
  const DType dt = t.dtype();
  push_comm(e, "broadcast", {t.storage()}, {t.storage()}, loc,
                  [impl, what, n, dt, root](const OpContext& c) {
                    impl->running(what);
                    impl->check_usable();
                    if (!impl->mpi || impl->size == 1) return;
                    void* data = c.writes[0]->data();
                    const int count = static_cast<int>(n);
                    impl->collective(
                        what, static_cast<std::size_t>(n) * dtype_size(dt),
                        [&](MPI_Request* req) { return MPI_Ibcast(data, count, mpi_type(dt), root, impl->comm, req); },
                        [&] { return MPI_Bcast(data, count, mpi_type(dt), root, impl->comm); });
                  });
}

Tensor Communicator::broadcast(const Tensor& t, int root, Loc loc) {
  if (on_gpu(t)) {
    check_root(*impl_, root);
    auto c = device_collective(*impl_, "broadcast", CollectiveKind::broadcast, t, -1, root);
    Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
    detail::push_device_collective(impl_, c, t, out, loc);
    return out;
  }
  engine_of(t, "broadcast");
  check_root(*impl_, root);
  Tensor out = copy_on_comm_stream(t, "broadcast_copy", loc);
  broadcast_(out, root, loc);
  return out;
}

Tensor Communicator::all_gather(const Tensor& t, Loc loc) {
  if (!t.defined()) throw UndefinedTensorError("all_gather: use of an undefined tensor");
  Shape shape;
  shape.push_back(impl_->size);
  for (auto d : t.shape()) shape.push_back(d);
  if (on_gpu(t)) {
    auto c = device_collective(*impl_, "all_gather", CollectiveKind::all_gather, t, -1, -1);
    Tensor out = Tensor::empty(shape, t.dtype(), t.device());
    detail::push_device_collective(impl_, c, t, out, loc);
    return out;
  }
  Engine& e = engine_of(t, "all_gather");
  Tensor out = Tensor::empty(shape, t.dtype(), t.device());
  const CollectiveId what = impl_->begin(CollectiveKind::all_gather, t.numel(), t.dtype());
  auto impl = impl_;
  const std::int64_t n = t.numel();
  const DType dt = t.dtype();
  push_comm(e, "all_gather", {t.storage()}, {out.storage()}, loc,
                  [impl, what, n, dt](const OpContext& c) {
                    impl->running(what);
                    impl->check_usable();
                    const void* in = c.reads[0]->data();
                    void* out = c.writes[0]->data();
                    if (!impl->mpi || impl->size == 1) {
                      std::memcpy(out, in, static_cast<std::size_t>(n) * dtype_size(dt));
                      return;
                    }
                    const int count = static_cast<int>(n);
                    const MPI_Datatype type = mpi_type(dt);
                    impl->collective(
                        what, static_cast<std::size_t>(n) * dtype_size(dt) * static_cast<std::size_t>(impl->size),
                        [&](MPI_Request* req) { return MPI_Iallgather(in, count, type, out, count, type, impl->comm, req); },
                        [&] { return MPI_Allgather(in, count, type, out, count, type, impl->comm); });
                  });
  return out;
}

Tensor Communicator::reduce_scatter(const Tensor& t, ReduceOp op, Loc loc) {
  if (!t.defined()) throw UndefinedTensorError("reduce_scatter: use of an undefined tensor");
  check_reduce("reduce_scatter", t, op);
  if (t.ndim() == 0 || t.shape()[0] % impl_->size != 0)
    throw ShapeError("reduce_scatter: the first axis of " + t.shape().str() + " must split evenly over " +
                     (impl_->parent ? "this " : "") + impl_->peers());
  Shape shape;
  shape.push_back(t.shape()[0] / impl_->size);
  for (int i = 1; i < t.ndim(); ++i) shape.push_back(t.shape()[i]);
  if (on_gpu(t)) {
    auto c = device_collective(*impl_, "reduce_scatter", CollectiveKind::reduce_scatter, t, static_cast<int>(op), -1);
    Tensor out = Tensor::empty(shape, t.dtype(), t.device());
    detail::push_device_collective(impl_, c, t, out, loc);
    return out;
  }
  Engine& e = engine_of(t, "reduce_scatter");
  Tensor out = Tensor::empty(shape, t.dtype(), t.device());
  const CollectiveId what =
      impl_->begin(CollectiveKind::reduce_scatter, t.numel(), t.dtype(), static_cast<int>(op));
  auto impl = impl_;
  const std::int64_t block = shape.numel();
  const DType dt = t.dtype();
  push_comm(e, "reduce_scatter", {t.storage()}, {out.storage()}, loc,
                  [impl, what, block, dt, op](const OpContext& c) {
                    impl->running(what);
                    impl->check_usable();
                    void* out_data = c.writes[0]->data();
                    const void* in = c.reads[0]->data();
                    if (!impl->mpi || impl->size == 1) {
                      std::memcpy(out_data, in, static_cast<std::size_t>(block) * dtype_size(dt));
                      return;
                    }
                    const int count = static_cast<int>(block);
                    impl->collective(
                        what, static_cast<std::size_t>(block) * dtype_size(dt) * static_cast<std::size_t>(impl->size),
                        [&](MPI_Request* req) {
                          return MPI_Ireduce_scatter_block(in, out_data, count, mpi_type(dt), mpi_op(op), impl->comm, req);
                        },
                        [&] { return MPI_Reduce_scatter_block(in, out_data, count, mpi_type(dt), mpi_op(op), impl->comm); });
                    if (op == ReduceOp::avg) divide(out_data, block, dt, impl->size);
                  });
  return out;
}

void Communicator::barrier(Loc loc) {
  Engine& e = current_engine();
  const CollectiveId what = impl_->begin(CollectiveKind::barrier);
  auto token = e.allocate(cpu(0), 1);
  auto impl = impl_;
  push_comm(e, "barrier", {}, {token}, loc,
                  [impl, what](const OpContext&) {
                    impl->running(what);
                    impl->check_usable();
                    if (!impl->mpi || impl->size == 1) return;
                    MPI_Request req;
                    if (int rc = MPI_Ibarrier(impl->comm, &req); rc != MPI_SUCCESS)
                      impl->mpi_failed(rc, "MPI_Ibarrier", what);
                    impl->wait(req, what);
                    detail::liveness_leave();
                  });
  e.wait_for(*token, "barrier", loc);
}

// ---- Several devices of one rank -------------------------------------------

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
          for (std::int64_t i = 0; i < n; ++i) out[i] += in[i];
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
  Engine& e = check_per_device(per_device, op);
  if (per_device.size() == 1) {
    all_reduce_(per_device[0], op, loc);
    return;
  }
  if (on_gpu(per_device[0])) {
    auto c = device_collective(*impl_, "all_reduce_", CollectiveKind::all_reduce, per_device[0], static_cast<int>(op),
                               -1, static_cast<int>(per_device.size()));
    detail::push_device_all_reduce(impl_, c, per_device, loc);
    return;
  }
  const std::int64_t n = per_device[0].numel();
  const DType dt = per_device[0].dtype();
  const std::size_t nbytes = static_cast<std::size_t>(n) * dtype_size(dt);
  const int ntensors = static_cast<int>(per_device.size());
  constexpr int kChunk = StorageList::kCapacity;
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
    push_comm(e, "all_reduce_local", std::move(reads), {buffer}, loc,
                    [n, dt, op, accumulate](const OpContext& c) { reduce_reads(c, n, dt, op, accumulate); });
    first = last;
  }

  // 2. Across ranks, in place in the buffer. It reads the buffer too, so
  // that a failed tensor's poison reaches the results (like a one-tensor
  // all-reduce, it is then skipped).
  const CollectiveId what = impl_->begin(CollectiveKind::all_reduce, n, dt, static_cast<int>(op), -1, ntensors);
  push_comm(e, "all_reduce", {buffer}, {buffer}, loc,
                  [impl = impl_, what, n, dt, op, ntensors](const OpContext& c) {
    impl->running(what);
    void* data = c.writes[0]->data();
    reduce_across_ranks(*impl, what, data, n, dt, op);
    if (op == ReduceOp::avg) divide(data, n, dt, ntensors * impl->size);
  });

  // 3. Copy the result back to every tensor, at most kChunk per op.
  for (int first = 0; first < ntensors; first += kChunk) {
    StorageList writes;
    for (int i = first; i < std::min(first + kChunk, ntensors); ++i)
      writes.add(per_device[static_cast<std::size_t>(i)].storage());
    push_comm(e, "all_reduce_write_back", {buffer}, std::move(writes), loc, [nbytes](const OpContext& c) {
      if (nbytes == 0) return;
      for (int w = 0; w < c.nwrites; ++w) std::memcpy(c.writes[w]->data(), c.reads[0]->data(), nbytes);
    });
  }
}

// ---- Sub-groups ------------------------------------------------------------

std::shared_ptr<Communicator> Communicator::split(int color, int key, Loc loc) {
  if (color < 0)
    throw ValueError("split: color " + std::to_string(color) + " must be >= 0 (every rank joins some group)");
  if (!impl_->mpi) return local(impl_->options);
  impl_->check_usable();
  Engine& e = current_engine();
  auto group = std::make_shared<Impl>();
  group->mpi = true;
  group->options = impl_->options;
  group->parent = impl_;
  group->free_in_destructor = false;  // until the split has succeeded
  const CollectiveId what = impl_->begin(CollectiveKind::split);
  auto token = e.allocate(cpu(0), 1);
  // MPI_Comm_split blocks until every rank calls it, so a timed, polled
  // rendezvous first checks that they have arrived at this split (as for
  // large collectives).
  push_comm(e, "split", {}, {token}, loc, [impl = impl_, group, what, color, key](const OpContext&) {
    impl->running(what);
    impl->check_usable();
    impl->arrive(what);
    if (int rc = MPI_Comm_split(impl->comm, color, key, &group->comm); rc != MPI_SUCCESS)
      impl->mpi_failed(rc, "MPI_Comm_split", what);
    TIDE_MPI_CHECK(MPI_Comm_rank(group->comm, &group->rank));
    TIDE_MPI_CHECK(MPI_Comm_size(group->comm, &group->size));
    group->world_rank = impl->world_rank;
    {
      // Every member agrees on this id: the parent's, the split's place and the color.
      const std::uint64_t words[3] = {impl->ident, what.seq, static_cast<std::uint64_t>(color)};
      group->ident = detail::chain_hash(0, detail::CollectiveSig{{words[0], words[1], words[2]}}) | 1;
      MPI_Group mine, parents;
      TIDE_MPI_CHECK(MPI_Comm_group(group->comm, &mine));
      TIDE_MPI_CHECK(MPI_Comm_group(impl->comm, &parents));
      std::vector<int> members(static_cast<std::size_t>(group->size)), in_parent(members.size());
      for (int r = 0; r < group->size; ++r) members[static_cast<std::size_t>(r)] = r;
      TIDE_MPI_CHECK(MPI_Group_translate_ranks(mine, group->size, members.data(), parents, in_parent.data()));
      MPI_Group_free(&mine);
      MPI_Group_free(&parents);
      group->world_ranks.resize(members.size());
      for (std::size_t r = 0; r < members.size(); ++r)
        group->world_ranks[r] = impl->world_ranks[static_cast<std::size_t>(in_parent[r])];
    }
    detail::liveness_leave();
    group->enable_checks();  // a collective over the group: every member runs it here
    group->free_in_destructor = true;  // ~Communicator hands it to the comm thread
  });
  e.wait_for(*token, "split", loc);
  return std::shared_ptr<Communicator>(new Communicator(std::move(group)));
}

}  // namespace tide
