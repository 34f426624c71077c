// Collectives on CUDA tensors through NCCL (see device_collectives.h).
//
// Each communicator gets one NCCL communicator per GPU it is used on, made
// at the first collective there. A collective is an op on the GPU's comm
// stream: its kernel enqueues the NCCL call on that cudaStream_t (after the
// engine has made the stream wait for the inputs' producers with events),
// then waits for it to finish, polling an event and NCCL's async error
// against TIDE_COMM_TIMEOUT. So a collective some rank never joins fails
// with its name, sequence number, size and peer count, and the NCCL
// communicator is aborted (which ends its kernels), instead of hanging the
// stream. The wait occupies only the comm stream's worker: compute streams
// keep launching. The cost is a host round trip between two collectives on
// one GPU.
#include "device_collectives.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>

#include <tide/core/assert.h>
#include <tide/core/cuda_check.h>
#include <tide/core/device_guard.h>
#include <tide/core/engine.h>

#include "../mpi/poller.h"
#include "../push_comm.h"

namespace tide::detail {

struct NcclComm {
  int device = 0;
  double timeout_s = 30.0;
  ncclComm_t comm = nullptr;    // set by the init op, before the frontend sees this
  cudaEvent_t done = nullptr;   // recorded after each collective; its kernel polls it
  std::atomic<bool> aborted{false};

  NcclComm() = default;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  /// Ends the communicator's kernels and frees it; later calls do nothing.
  void abort() noexcept {
    if (comm && !aborted.exchange(true)) ncclCommAbort(comm);
  }

  /// Finalizes and destroys the communicator (a collective over its
  /// members: every rank calls it at the same point of its program, see
  /// release_device_comms); past the timeout, or after a failure, aborts
  /// it. Later calls do nothing. With the device current.
  void release() noexcept {
    if (done && cudaEventDestroy(done) != cudaSuccess) cudaGetLastError();
    done = nullptr;
    if (!comm || aborted.exchange(true)) return;
    ncclResult_t state = ncclCommFinalize(comm);
    Poller poller(timeout_s);
    while (state == ncclInProgress) {
      if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) break;
      if (state == ncclInProgress && !poller.next()) break;
    }
    if (state == ncclSuccess)
      ncclCommDestroy(comm);
    else
      ncclCommAbort(comm);
  }

  ~NcclComm() {
    if (!comm && !done) return;
    try {
      backend::DeviceGuard gpu(device, true);
      release();
    } catch (const std::exception&) {
      // The device is gone (process exit): the driver reclaims everything.
    }
  }
};

namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::i64: return ncclInt64;
    case DType::b8: return ncclUint8;  // moved, never reduced (check_reduce)
    case DType::i32: break;
  }
  return ncclInt32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::avg: return ncclAvg;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
  }
  return ncclSum;
}

/// "all_reduce #3 (1000 x f32, sum, 2 ranks) on cuda:0 (NCCL)".
std::string name_of(const Communicator::Impl& impl, const CollectiveId& what, int device) {
  return what.str(impl.peers()) + " on cuda:" + std::to_string(device) + " (NCCL)";
}

std::string nccl_text(ncclResult_t r, ncclComm_t comm) {
  std::string s = ncclGetErrorString(r);
  if (const char* last = ncclGetLastError(comm); last && *last) s += std::string(" (") + last + ")";
  return s;
}

/// A failed NCCL call or async error: aborts the NCCL communicator and
/// breaks the communicator (throws CommError).
[[noreturn]] void nccl_failed(Communicator::Impl& impl, NcclComm& nc, const CollectiveId& what, const char* call,
                              ncclResult_t r) {
  std::string text = nccl_text(r, nc.comm);
  nc.abort();
  impl.fail(name_of(impl, what, nc.device) + ": " + call + " failed on rank " + std::to_string(impl.mpi.rank) + ": " +
            text);
}

/// Waits until a non-blocking communicator is no longer in progress:
/// ncclSuccess, an error, or ncclInProgress past the deadline.
ncclResult_t settle(ncclComm_t comm, Poller& poller) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    if (ncclResult_t r = ncclCommGetAsyncError(comm, &state); r != ncclSuccess) return r;
    if (state != ncclInProgress) return state;
    if (!poller.next()) return ncclInProgress;
  }
}

[[noreturn]] void nccl_timed_out(Communicator::Impl& impl, NcclComm& nc, const CollectiveId& what,
                                 const char* during) {
  nc.abort();
  char secs[32];
  std::snprintf(secs, sizeof secs, "%g", impl.options.timeout_s);
  impl.fail(name_of(impl, what, nc.device) + ": " + during + " not done after " + secs +
            " s (TIDE_COMM_TIMEOUT) on rank " + std::to_string(impl.mpi.rank) +
            ": a rank did not join it, pushed another collective, or is stuck; the NCCL communicator was aborted");
}

/// The init op's body, on cpu:0's comm thread: one NCCL communicator of
/// size x k members for this rank's k GPUs (member rank x k + i is GPU i),
/// made in one NCCL group as NCCL asks of a thread that drives several GPUs.
void init_nccl(Communicator::Impl& impl, const std::vector<std::shared_ptr<NcclComm>>& ncs, const CollectiveId& what) {
  impl.running(what);
  impl.check_usable();
  struct {
    ncclUniqueId id;
    char error[120];
  } msg{};
  if (impl.mpi.rank == 0) {
    if (ncclResult_t r = ncclGetUniqueId(&msg.id); r != ncclSuccess)
      std::snprintf(msg.error, sizeof msg.error, "%s", ncclGetErrorString(r));
  }
  if (impl.mpi.active && impl.mpi.size > 1) {
    void* data = &msg;
    const int bytes = static_cast<int>(sizeof msg);
    impl.mpi.collective(
        what, sizeof msg,
        [&](MPI_Request* req) { return MPI_Ibcast(data, bytes, MPI_BYTE, 0, impl.mpi.comm, req); },
        [&] { return MPI_Bcast(data, bytes, MPI_BYTE, 0, impl.mpi.comm); });
  }
  liveness_leave();
  flight_ended(what.flight, false);  // its host side, the id's broadcast
  std::string gpus;
  for (const auto& nc : ncs) gpus += (gpus.empty() ? "cuda:" : ",cuda:") + std::to_string(nc->device);
  const std::string name = what.str(impl.peers()) + " for " + gpus;
  if (msg.error[0]) impl.fail(name + ": rank 0 could not make an NCCL id: " + msg.error);

  const int k = static_cast<int>(ncs.size());
  std::vector<ncclComm_t> comms(ncs.size(), nullptr);
  auto abort_all = [&] {
    for (ncclComm_t& c : comms)
      if (c) ncclCommAbort(c);
  };
  ncclResult_t r = ncclSuccess;
  {
    // NCCL binds a communicator to the calling thread's current GPU.
    backend::DeviceGuard restore(ncs[0]->device, true);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // so that a stuck init can be timed out and aborted
    if (k > 1) r = ncclGroupStart();
    for (int i = 0; i < k && (r == ncclSuccess || r == ncclInProgress); ++i) {
      if (cudaSetDevice(ncs[static_cast<std::size_t>(i)]->device) != cudaSuccess) {
        cudaGetLastError();
        r = ncclUnhandledCudaError;
        break;
      }
      r = ncclCommInitRankConfig(&comms[static_cast<std::size_t>(i)], impl.mpi.size * k, msg.id, impl.mpi.rank * k + i,
                                 &config);
    }
    if (k > 1) {
      const ncclResult_t end = ncclGroupEnd();
      if (r == ncclSuccess || r == ncclInProgress) r = end;
    }
  }
  Poller poller(impl.options.timeout_s);
  for (std::size_t i = 0; i < comms.size() && (r == ncclSuccess || r == ncclInProgress); ++i)
    r = comms[i] ? settle(comms[i], poller) : ncclInternalError;
  if (r != ncclSuccess) {
    const std::string text =
        r == ncclInProgress ? "not done after the timeout (TIDE_COMM_TIMEOUT)" : nccl_text(r, comms[0]);
    abort_all();
    impl.fail(name + ": ncclCommInitRankConfig failed on rank " + std::to_string(impl.mpi.rank) + ": " + text);
  }
  for (std::size_t i = 0; i < ncs.size(); ++i) {
    backend::DeviceGuard gpu(ncs[i]->device, true);
    if (cudaError_t e = cudaEventCreateWithFlags(&ncs[i]->done, cudaEventDisableTiming); e != cudaSuccess) {
      abort_all();
      impl.fail(name + ": " + cuda_error_message(e, "cudaEventCreateWithFlags", __FILE__, __LINE__));
    }
  }
  for (std::size_t i = 0; i < ncs.size(); ++i) ncs[i]->comm = comms[i];
}

/// The collective op's body, on the GPU's comm stream worker.
void run_collective(Communicator::Impl& impl, NcclComm& nc, const CollectiveId& what, const OpContext& ctx) {
  if (ctx.skipped) {
    // NCCL pairs collectives by order alone: were this rank to skip one
    // that its peers run, its next would pair with theirs. Abort instead;
    // the peers' wait then fails (timeout) rather than mixing data.
    if (impl.is_broken()) return;
    nc.abort();
    impl.fail(name_of(impl, what, nc.device) + ": skipped on rank " + std::to_string(impl.mpi.rank) +
              " (its input comes from a failed op, or it was cancelled); the NCCL communicator was aborted so "
              "that no later collective pairs with the wrong one");
  }
  impl.check_usable();
  // For the SIGTERM report: which GPU collective this rank waits in.
  struct GpuWhere {
    GpuWhere(const Communicator::Impl& impl, const CollectiveId& what, int device)
        : device(impl.mpi.spans_ranks() ? device : -1) {
      if (this->device >= 0) liveness_enter_gpu(device, what, impl.mpi.size, impl.mpi.ident != 0);
    }
    ~GpuWhere() {
      if (device >= 0) liveness_leave_gpu(device);
    }
    GpuWhere(const GpuWhere&) = delete;
    GpuWhere& operator=(const GpuWhere&) = delete;
    int device;
  } where(impl, what, nc.device);
  const CollectiveSpec& spec = collective_spec(what.kind);
  if (!spec.nccl) TIDE_UNREACHABLE("a GPU collective of a kind that has no NCCL call (the frontend pushes none)");
  // Every rank has the same count, so all of them skip an empty collective.
  const std::size_t n = static_cast<std::size_t>(spec.call_count(what.count, impl.mpi.size));
  auto stream = static_cast<cudaStream_t>(ctx.native_stream);
  const char* call = spec.nccl_name;
  ncclResult_t r = ncclSuccess;
  if (n) {
    NcclArgs a;
    a.in = ctx.reads[0]->data();
    a.out = ctx.writes[0]->data();
    a.count = n;
    a.type = nccl_type(what.dtype);
    a.op = nccl_op(what.op.value_or(ReduceOp::sum));
    a.root = what.root;
    a.comm = nc.comm;
    a.stream = stream;
    r = static_cast<ncclResult_t>(spec.nccl(a));
  }
  Poller poller(impl.options.timeout_s);
  if (r == ncclInProgress) r = settle(nc.comm, poller);
  if (r == ncclInProgress) nccl_timed_out(impl, nc, what, call);
  if (r != ncclSuccess) nccl_failed(impl, nc, what, call, r);
  if (!n) return;
  ctx.launched();  // the op's device span ends with NCCL's work, not with the wait below

  TIDE_CUDA_CHECK(cudaEventRecord(nc.done, stream));
  for (;;) {
    const cudaError_t q = cudaEventQuery(nc.done);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) {
      nc.abort();
      impl.fail(name_of(impl, what, nc.device) + ": " + cuda_error_message(q, "cudaEventQuery", __FILE__, __LINE__));
    }
    if (poller.periodic()) {
      // A desync check (or another failure) broke the communicator while
      // this waits: the peers are not coming.
      if (impl.is_broken()) {
        nc.abort();
        throw CommError(name_of(impl, what, nc.device) + ": abandoned, the communicator broke while it waited: " +
                        impl.failure());
      }
      // A peer broke the world and said why (heard by the comm thread).
      if (const std::string told = told_failure(); !told.empty()) {
        nc.abort();
        impl.fail(name_of(impl, what, nc.device) + ": abandoned: " + told);
      }
      ncclResult_t state = ncclSuccess;
      if (ncclResult_t g = ncclCommGetAsyncError(nc.comm, &state); g != ncclSuccess) state = g;
      if (state != ncclSuccess && state != ncclInProgress) nccl_failed(impl, nc, what, "an asynchronous NCCL error", state);
    }
    if (!poller.next()) nccl_timed_out(impl, nc, what, call);
  }
}

}  // namespace

bool nccl_built() { return true; }

namespace {

/// Frontend: this communicator's NCCL communicators for `devices` (one per
/// GPU, in that order), made at their first use: an init op on the comm
/// thread, waited for once (a counted blocker).
const std::vector<std::shared_ptr<NcclComm>>& comms_for(const std::shared_ptr<Communicator::Impl>& impl, Engine& e,
                                                       const std::vector<int>& devices, Loc loc) {
  for (const auto& set : impl->nccl)
    if (set.devices == devices) return set.comms;
  impl->check_usable();
  std::vector<std::shared_ptr<NcclComm>> ncs;
  for (int d : devices) {
    auto nc = std::make_shared<NcclComm>();
    nc->device = d;
    nc->timeout_s = impl->options.timeout_s;
    ncs.push_back(std::move(nc));
  }
  const CollectiveId what =
      impl->begin(CollectiveKind::nccl_init, -1, DType::f32, std::nullopt, -1, static_cast<int>(devices.size()));
  auto token = e.allocate(cpu(0), 1);
  push_comm(e, "nccl_init", {}, {token}, loc, [impl, ncs, what](const OpContext&) { init_nccl(*impl, ncs, what); });
  try {
    e.wait_for(*token, "nccl_init", loc);
  } catch (...) {
    // The barrier may report an earlier failure elsewhere: communicators
    // made here are kept, so that no rank pushes a second init.
    if (ncs[0]->comm) impl->nccl.push_back({devices, ncs});
    throw;
  }
  impl->nccl.push_back({devices, std::move(ncs)});
  return impl->nccl.back().comms;
}

void push_on_gpu(const std::shared_ptr<Communicator::Impl>& impl, const std::shared_ptr<NcclComm>& nc,
                 const CollectiveId& what, const Tensor& in, const Tensor& out, Loc loc) {
  OpDesc op;
  op.name = collective_kind_name(what.kind);
  op.device = in.device();
  op.stream = static_cast<int>(StreamKind::comm);
  op.reads = {in.storage()};
  op.writes = {out.storage()};
  op.loc = loc;
  op.fn = [impl, nc, what](const OpContext& ctx) { run_collective(*impl, *nc, what, ctx); };
  op.notify_skip = true;
  in.engine().push(std::move(op));
}

}  // namespace

void push_device_collective(const std::shared_ptr<Communicator::Impl>& impl, const CollectiveId& what,
                            const Tensor& in, const Tensor& out, Loc loc) {
  const std::vector<int> devices{in.device().index};
  const std::shared_ptr<NcclComm> nc = comms_for(impl, in.engine(), devices, loc)[0];
  push_on_gpu(impl, nc, what, in, out, loc);
}

void push_device_all_reduce(const std::shared_ptr<Communicator::Impl>& impl, const CollectiveId& what,
                            std::vector<Tensor>& per_device, Loc loc) {
  Engine& e = per_device[0].engine();
  if (per_device.size() > 1 && e.kind() == EngineKind::naive)
    throw UsageError("all_reduce_: the naive engine runs one op at a time on one thread, so the NCCL calls of " +
                     std::to_string(per_device.size()) +
                     " GPUs would wait for each other; use the async engine for several GPUs per rank");
  // The same GPUs in any order are the same communicator (sorted).
  std::vector<int> devices;
  for (const Tensor& t : per_device) devices.push_back(t.device().index);
  std::sort(devices.begin(), devices.end());
  const auto& comms = comms_for(impl, e, devices, loc);
  // One op per GPU, each on its own comm stream (and worker thread), so no
  // thread drives two of the communicators and no NCCL group is needed.
  for (Tensor& t : per_device) {
    const auto at = std::lower_bound(devices.begin(), devices.end(), t.device().index) - devices.begin();
    push_on_gpu(impl, comms[static_cast<std::size_t>(at)], what, t, t, loc);
  }
}

void release_device_comms_now(Communicator::Impl& impl) noexcept {
  for (const auto& set : impl.nccl) {
    std::vector<NcclComm*> live;
    for (const auto& nc : set.comms)
      if (nc->comm && !nc->aborted.load()) live.push_back(nc.get());
    if (live.empty()) continue;
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess) prev = -1;
    // Every member starts finalizing before any is waited for.
    std::vector<ncclResult_t> state(live.size(), ncclInProgress);
    ncclGroupStart();
    for (std::size_t i = 0; i < live.size(); ++i) {
      if (cudaSetDevice(live[i]->device) != cudaSuccess) cudaGetLastError();
      state[i] = ncclCommFinalize(live[i]->comm);
    }
    ncclGroupEnd();
    Poller poller(live[0]->timeout_s);
    for (std::size_t i = 0; i < live.size(); ++i) {
      if (state[i] == ncclSuccess) state[i] = ncclInProgress;  // ask: the group may still be at work
      while (state[i] == ncclInProgress) {
        if (ncclCommGetAsyncError(live[i]->comm, &state[i]) != ncclSuccess) state[i] = ncclInternalError;
        if (state[i] == ncclInProgress && !poller.next()) break;
      }
    }
    for (std::size_t i = 0; i < live.size(); ++i) {
      NcclComm& nc = *live[i];
      if (cudaSetDevice(nc.device) != cudaSuccess) cudaGetLastError();
      if (nc.done && cudaEventDestroy(nc.done) != cudaSuccess) cudaGetLastError();
      nc.done = nullptr;
      nc.aborted.store(true);
      if (state[i] == ncclSuccess)
        ncclCommDestroy(nc.comm);
      else
        ncclCommAbort(nc.comm);
    }
    if (prev >= 0 && cudaSetDevice(prev) != cudaSuccess) cudaGetLastError();
  }
}

void release_device_comms(const std::shared_ptr<Communicator::Impl>& impl, Engine& e) {
  for (const auto& set : impl->nccl) {
    for (const auto& nc : set.comms) {
      OpDesc op;
      op.name = "nccl_release";
      op.device = cuda(nc->device);
      op.stream = static_cast<int>(StreamKind::comm);
      op.fn = [nc](const OpContext&) { nc->release(); };
      e.push(std::move(op));
    }
  }
}

}  // namespace tide::detail
