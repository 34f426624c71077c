// The backend half of the engine, shared by the async and naive engines:
// running one op (its poison check, the kernel, error capture, and the
// observers around the kernel: stats, NVTX range, flight record, trace),
// settling a GPU op's trace event, and recording a GPU fault.
#include "engine_backend.h"

#include <string>
#include <vector>

#include "backend.h"
#include "stream.h"

namespace tide {

EngineBackend::EngineBackend(const EngineOptions& options)
    : Engine(options), gpu_sync_after_op_(backend::sync_mode()) {}

namespace {
std::shared_ptr<const OpProvenance> make_provenance(const OpDesc& op, std::string stream, std::uint64_t step,
                                                    std::uint64_t seq, std::string what) {
  auto p = std::make_shared<OpProvenance>();
  p->op = op.name;
  p->stream = std::move(stream);
  p->step = step;
  p->seq = seq;
  p->call_site = format_call_site(op.loc);
  p->what = std::move(what);
  return p;
}
}  // namespace

void EngineBackend::record_device_failure(const OpDesc& op, int stream_index, std::uint64_t seq,
                                          std::uint64_t step, std::uint64_t push_index, const std::string& what,
                                          bool at_completion) {
  auto prov = make_provenance(op, stream_name(stream_index), step, seq,
                              what + (at_completion ? " (seen when this op completed on the GPU; the fault may come "
                                                      "from it or from earlier work on the device)"
                                                    : " (when this op was launched; the device's streams are not "
                                                      "usable after it)"));
  counters_->failed.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(counters_->mutex);
  auto& slot = counters_->device_failures[static_cast<std::size_t>(stream_index / kStreamKinds)];
  if (slot) return;  // sticky: the first fault says it all
  slot = prov;
  counters_->errors.record(prov, push_index);
  device_failed_.store(true, std::memory_order_release);
}

namespace {

/// What watches an op's kernel run on its stream: the stream's counters
/// (ops, busy time), what the worker runs now and ran last (for the flight
/// recorder), the NVTX range, and the trace event. enter() before the
/// kernel, exit() after it.
class RunObserver {
 public:
  RunObserver(StreamCounters& sc, const OpDesc& op) : sc_(sc), op_(op) {}
  void enter() {
    t0_ = now_ns();
    sc_.running_since.store(t0_, std::memory_order_relaxed);
    sc_.running.store(op_.name, std::memory_order_relaxed);
    backend::range_push(op_.name);
  }
  /// Returns the trace event's slot (-1 when not traced).
  std::int64_t exit(bool traced, const QueuedOp& q, int stream_index) {
    backend::range_pop();
    const std::int64_t t1 = now_ns();
    sc_.running.store(nullptr, std::memory_order_relaxed);
    sc_.last.store(op_.name, std::memory_order_relaxed);
    sc_.last_end.store(t1, std::memory_order_relaxed);
    sc_.ops.store(sc_.ops.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // one writer
    sc_.busy_ns.store(sc_.busy_ns.load(std::memory_order_relaxed) + (t1 - t0_), std::memory_order_relaxed);
    if (!traced) return -1;
    std::vector<TraceWait> waits;
    for (int i = 0; i < q.nwaits; ++i)
      if (q.waits[i].stream) waits.push_back({q.waits[i].stream->index(), q.waits[i].seq});
    return sc_.trace.append(op_.name, stream_index, q.step, q.push_index, t0_, t1, q.seq, op_.loc.file_name(),
                            op_.loc.line(), std::move(waits));
  }

 private:
  StreamCounters& sc_;
  const OpDesc& op_;
  std::int64_t t0_ = 0;
};

}  // namespace

void EngineBackend::run_op(QueuedOp& q, int stream_index, void* native_stream, const char* skip_reason) {
  run_op(q.desc, q, stream_index, native_stream, skip_reason);
}

void EngineBackend::run_op(OpDesc& op, QueuedOp& q, int stream_index, void* native_stream, const char* skip_reason) {
  q.trace_slot = -1;
  auto make_prov = [&](std::string what) {
    return make_provenance(op, stream_name(stream_index), q.step, q.seq, std::move(what));
  };
  const Device device = devices_[static_cast<std::size_t>(stream_index / kStreamKinds)];
  const auto stream_kind = static_cast<StreamKind>(stream_index % kStreamKinds);
  std::shared_ptr<const OpProvenance> poison;
  const bool cancelled = cancelling_.load(std::memory_order_acquire);
  if (cancelled) {
    poison = make_prov("cancelled before it ran");
  } else if (skip_reason) {
    poison = make_prov(std::string("not run: ") + skip_reason);
  } else {
    for (int i = 0; i < op.reads.size() && !poison; ++i) poison = op.reads[i]->poison();
  }
  if (poison) {
    counters_->skipped.fetch_add(1, std::memory_order_relaxed);
    if (skip_reason && !cancelled) {
      // Not an input's failure (already recorded where it happened): the
      // stream could not order or launch this op. wait_all reports it,
      // unless the device's failure (recorded first) already says it all.
      std::lock_guard<std::mutex> lock(counters_->mutex);
      if (!counters_->device_failures[static_cast<std::size_t>(stream_index / kStreamKinds)]) {
        counters_->failed.fetch_add(1, std::memory_order_relaxed);
        counters_->errors.record(poison, q.push_index);
      }
    }
    if (op.notify_skip) {
      OpContext ctx{device, stream_kind, native_stream, nullptr, nullptr, 0, 0, true};
      try {
        op.fn(ctx);
      } catch (...) {
      }
    }
  } else {
    Storage* reads[StorageList::kCapacity];
    Storage* writes[StorageList::kCapacity];
    for (int i = 0; i < op.reads.size(); ++i) reads[i] = op.reads[i];
    for (int i = 0; i < op.writes.size(); ++i) writes[i] = op.writes[i];
    OpContext ctx{device, stream_kind, native_stream, reads, writes, op.reads.size(), op.writes.size()};
    if (q.timing_lane) {
      ctx.on_launched = &QueuedOp::record_end_now;
      ctx.launched_arg = &q;
    }
    RunObserver observer(*counters_->streams[static_cast<std::size_t>(stream_index)], op);
    observer.enter();
    try {
      op.fn(ctx);
      if (native_stream && gpu_sync_after_op_) {
        ctx.launched();  // a traced op's span ends with its kernels, not with the host's wait
        backend::sync_stream(native_stream);
      }
    } catch (const std::exception& e) {
      poison = make_prov(e.what());
    } catch (...) {
      poison = make_prov("unknown exception");
    }
    // Kernels launched before the throw may still run: in sync mode the op's
    // storages must not be released (and reused) under them.
    if (poison && native_stream && gpu_sync_after_op_) {
      try {
        backend::sync_stream(native_stream);
      } catch (const std::exception&) {
      }
    }
    q.trace_slot = observer.exit(tracing_.load(std::memory_order_relaxed), q, stream_index);
    if (poison) {
      counters_->failed.fetch_add(1, std::memory_order_relaxed);
      std::lock_guard<std::mutex> lock(counters_->mutex);
      counters_->errors.record(poison, q.push_index);
    }
  }
  // Stored only when it changes: the common case (clean in, clean out) then
  // leaves the storage's cache line alone for the frontend.
  // A successful write clears the poison only when it covers the whole
  // block: a view of part of it, or a scatter, leaves the rest as bad as
  // it was.
  for (int i = 0; i < op.writes.size(); ++i) {
    Storage* w = op.writes[i];
    if (poison) w->set_poison(poison);
    else if (w->poison() && w->covers_owner() && !op.partial_write) w->set_poison(nullptr);
  }
}

void EngineBackend::settle_trace(int stream_index, std::int64_t slot, bool retimed, std::int64_t start_ns,
                                 std::int64_t end_ns) {
  counters_->streams[static_cast<std::size_t>(stream_index)]->trace.settle(slot, retimed, start_ns, end_ns);
}

}  // namespace tide
