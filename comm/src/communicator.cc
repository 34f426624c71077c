#include <tide/comm/communicator.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <thread>

#include <tide/core/engine.h>

#include "mpi_check.h"

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
  return o;
}

namespace {

/// Names one collective for error messages; formatted only on failure, so a
/// push pays for no string.
struct CollectiveId {
  const char* name;
  std::uint64_t seq;
  std::int64_t count;
  DType dtype;
  const char* op = nullptr;  // reduction, if any
  int root = -1;             // broadcast root, if any

  std::string str(int peers) const {
    std::ostringstream os;
    os << name << " #" << seq;
    if (count >= 0) os << " (" << count << " x " << dtype_name(dtype) << ", ";
    else os << " (";
    if (op) os << op << ", ";
    if (root >= 0) os << "root " << root << ", ";
    os << peers << " ranks)";
    return os.str();
  }
};

}  // namespace

struct Communicator::Impl {
  bool mpi = false;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  CommOptions options;
  std::uint64_t next_seq = 0;  // frontend only
  std::atomic<bool> broken{false};
  std::mutex mutex;
  std::string broken_reason;  // guarded by mutex

  ~Impl() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (mpi && !finalized && comm != MPI_COMM_NULL && !broken) MPI_Comm_free(&comm);
  }

  void check_usable() {
    if (!broken.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lock(mutex);
    throw CommError("communicator is broken by an earlier failure: " + broken_reason);
  }

  [[noreturn]] void fail(const std::string& what) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (broken_reason.empty()) broken_reason = what;
    }
    broken.store(true, std::memory_order_release);
    throw CommError(what);
  }

  /// Runs one collective on the comm thread. Small ones use MPI's
  /// non-blocking form, polled against the deadline. Large ones first check
  /// that every rank has arrived (a polled, timed non-blocking barrier) and
  /// then call MPI's blocking form: Open MPI's non-blocking collectives reach
  /// well under half the bandwidth of its tuned blocking ones. Once all ranks
  /// are in, the blocking call can only stall if a peer dies, and then the
  /// launcher ends the job.
  template <typename StartNonBlocking, typename Blocking>
  void collective(const CollectiveId& what, std::size_t bytes, StartNonBlocking start, Blocking blocking) {
    MPI_Request req;
    if (bytes < kBlockingFromBytes) {
      TIDE_MPI_CHECK(start(&req));
      wait(req, what);
      return;
    }
    TIDE_MPI_CHECK(MPI_Ibarrier(comm, &req));
    wait(req, what);
    TIDE_MPI_CHECK(blocking());
  }
  static constexpr std::size_t kBlockingFromBytes = 64 << 10;

  /// Polls `req` until done or the deadline; runs on the comm thread.
  void wait(MPI_Request& req, const CollectiveId& what) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto deadline = start + std::chrono::duration<double>(options.timeout_s);
    // MPI progresses a non-blocking collective only inside MPI calls, so the
    // first ~100 us poll without sleeping (yielding, so that compute threads
    // sharing the core still run). Past that the collective is waiting for a
    // peer that is still computing, and a spinning poller would take the CPU
    // that peer (or this rank's own compute stream) needs: poll every 50 us,
    // and past a second every millisecond.
    auto pause = std::chrono::microseconds(0);
    for (int polls = 0;; ++polls) {
      int done = 0;
      TIDE_MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
      if (done) return;
      if (polls > 100) std::this_thread::yield();
      if ((polls & 15) == 0 && polls > 0) {
        const auto waited = clock::now() - start;
        pause = waited > std::chrono::seconds(1)           ? std::chrono::microseconds(1000)
                : waited > std::chrono::microseconds(100) ? std::chrono::microseconds(50)
                                                           : std::chrono::microseconds(0);
      }
      if (pause.count()) std::this_thread::sleep_for(pause);
      if ((polls & 15) == 0 && clock::now() > deadline) {
        std::ostringstream os;
        os << what.str(size) << " timed out after " << options.timeout_s << " s on rank " << rank << " of " << size
           << ": a peer never joined, died, or runs a different sequence of collectives";
        fail(os.str());
      }
    }
  }
};

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

void check_reduce(const char* name, const Tensor& t, ReduceOp op) {
  if (op == ReduceOp::avg && !is_floating(t.dtype()))
    throw DTypeError(std::string(name) + ": avg needs a floating dtype, got " + dtype_name(t.dtype()));
}


}  // namespace

Communicator::Communicator(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

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
  TIDE_MPI_CHECK(MPI_Comm_rank(impl->comm, &impl->rank));
  TIDE_MPI_CHECK(MPI_Comm_size(impl->comm, &impl->size));
  return std::shared_ptr<Communicator>(new Communicator(std::move(impl)));
}

int Communicator::rank() const { return impl_->rank; }
int Communicator::size() const { return impl_->size; }
bool Communicator::uses_mpi() const { return impl_->mpi; }
bool Communicator::broken() const { return impl_->broken.load(std::memory_order_acquire); }

namespace {

// Pushes one collective on cpu:0's comm stream.
template <typename Fn>
void push_collective(Engine& e, const char* name, StorageList reads, StorageList writes, Loc loc, Fn fn) {
  OpDesc op;
  op.name = name;
  op.device = cpu(0);
  op.stream = static_cast<int>(StreamKind::comm);
  op.reads = std::move(reads);
  op.writes = std::move(writes);
  op.loc = loc;
  op.fn = std::move(fn);
  e.push(std::move(op));
}

/// A copy of `t` made on the comm stream, for the out-of-place collectives.
Tensor copy_on_comm_stream(const Tensor& t, const char* name, Loc loc) {
  Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
  const std::size_t nbytes = t.nbytes();
  push_collective(t.engine(), name, {t.storage()}, {out.storage()}, loc, [nbytes](const OpContext& c) {
    std::memcpy(c.writes[0]->data(), c.reads[0]->data(), nbytes);
  });
  return out;
}

}  // namespace

void Communicator::all_reduce_(Tensor& t, ReduceOp op, Loc loc) {
  Engine& e = engine_of(t, "all_reduce_");
  check_reduce("all_reduce_", t, op);
  const std::uint64_t seq = impl_->next_seq++;
  const CollectiveId what{"all_reduce", seq, t.numel(), t.dtype(), reduce_op_name(op)};
  auto impl = impl_;
  const std::int64_t n = t.numel();
  const DType dt = t.dtype();
  push_collective(e, "all_reduce", {t.storage()}, {t.storage()}, loc,
                  [impl, what, n, dt, op](const OpContext& c) {
                    impl->check_usable();
                    void* data = c.writes[0]->data();
                    if (impl->mpi && impl->size > 1) {
                      const int count = static_cast<int>(n);
                      impl->collective(
                          what, static_cast<std::size_t>(n) * dtype_size(dt),
                          [&](MPI_Request* req) {
                            return MPI_Iallreduce(MPI_IN_PLACE, data, count, mpi_type(dt), mpi_op(op), impl->comm, req);
                          },
                          [&] { return MPI_Allreduce(MPI_IN_PLACE, data, count, mpi_type(dt), mpi_op(op), impl->comm); });
                    }
                    if (op == ReduceOp::avg && impl->size > 1) divide(data, n, dt, impl->size);
                  });
}

Tensor Communicator::all_reduce(const Tensor& t, ReduceOp op, Loc loc) {
  engine_of(t, "all_reduce");
  check_reduce("all_reduce", t, op);
  Tensor out = copy_on_comm_stream(t, "all_reduce_copy", loc);
  all_reduce_(out, op, loc);
  return out;
}

void Communicator::broadcast_(Tensor& t, int root, Loc loc) {
  Engine& e = engine_of(t, "broadcast_");
  if (root < 0 || root >= impl_->size)
    throw ValueError("broadcast: root " + std::to_string(root) + " is not a rank of a world of " +
                     std::to_string(impl_->size));
  const std::uint64_t seq = impl_->next_seq++;
  const CollectiveId what{"broadcast", seq, t.numel(), t.dtype(), nullptr, root};
  auto impl = impl_;
  const std::int64_t n = t.numel();
  const DType dt = t.dtype();
  push_collective(e, "broadcast", {t.storage()}, {t.storage()}, loc,
                  [impl, what, n, dt, root](const OpContext& c) {
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
  engine_of(t, "broadcast");
  Tensor out = copy_on_comm_stream(t, "broadcast_copy", loc);
  broadcast_(out, root, loc);
  return out;
}

Tensor Communicator::all_gather(const Tensor& t, Loc loc) {
  Engine& e = engine_of(t, "all_gather");
  Shape shape;
  shape.push_back(impl_->size);
  for (auto d : t.shape()) shape.push_back(d);
  const std::uint64_t seq = impl_->next_seq++;
  const CollectiveId what{"all_gather", seq, t.numel(), t.dtype()};
  Tensor out = Tensor::empty(shape, t.dtype(), t.device());
  auto impl = impl_;
  const std::int64_t n = t.numel();
  const DType dt = t.dtype();
  push_collective(e, "all_gather", {t.storage()}, {out.storage()}, loc,
                  [impl, what, n, dt](const OpContext& c) {
                    impl->check_usable();
                    if (!impl->mpi || impl->size == 1) {
                      std::memcpy(c.writes[0]->data(), c.reads[0]->data(),
                                  static_cast<std::size_t>(n) * dtype_size(dt));
                      return;
                    }
                    const void* in = c.reads[0]->data();
                    void* out = c.writes[0]->data();
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
  Engine& e = engine_of(t, "reduce_scatter");
  check_reduce("reduce_scatter", t, op);
  if (t.ndim() == 0 || t.shape()[0] % impl_->size != 0)
    throw ShapeError("reduce_scatter: the first axis of " + t.shape().str() + " must split evenly over " +
                     std::to_string(impl_->size) + " ranks");
  Shape shape;
  shape.push_back(t.shape()[0] / impl_->size);
  for (int i = 1; i < t.ndim(); ++i) shape.push_back(t.shape()[i]);
  const std::uint64_t seq = impl_->next_seq++;
  const CollectiveId what{"reduce_scatter", seq, t.numel(), t.dtype(), reduce_op_name(op)};
  Tensor out = Tensor::empty(shape, t.dtype(), t.device());
  auto impl = impl_;
  const std::int64_t block = shape.numel();
  const DType dt = t.dtype();
  push_collective(e, "reduce_scatter", {t.storage()}, {out.storage()}, loc,
                  [impl, what, block, dt, op](const OpContext& c) {
                    impl->check_usable();
                    void* out_data = c.writes[0]->data();
                    if (!impl->mpi || impl->size == 1) {
                      std::memcpy(out_data, c.reads[0]->data(), static_cast<std::size_t>(block) * dtype_size(dt));
                      return;
                    }
                    const void* in = c.reads[0]->data();
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
  const std::uint64_t seq = impl_->next_seq++;
  const CollectiveId what{"barrier", seq, -1, DType::f32};
  auto token = e.allocate(cpu(0), 1);
  auto impl = impl_;
  push_collective(e, "barrier", {}, {token}, loc,
                  [impl, what](const OpContext&) {
                    impl->check_usable();
                    if (!impl->mpi || impl->size == 1) return;
                    MPI_Request req;
                    TIDE_MPI_CHECK(MPI_Ibarrier(impl->comm, &req));
                    impl->wait(req, what);
                  });
  e.wait_for(*token, "barrier", loc);
}

}  // namespace tide
