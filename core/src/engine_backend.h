// EngineBackend: the base of the async and naive engines. Engine
// (<tide/core/engine.h>) is the API programs use and the hooks a backend
// overrides (submit, wait_storage, wait_everything, the step hooks,
// backend_stats, kind, cancel_pending); what a backend calls to run an op
// and keep its records is here, internal to core. The path of one op:
// Engine::push -> submit -> the stream's queue -> its worker -> run_op ->
// the kernel.
#pragma once

#include <cstdint>
#include <string>

#include "engine_internal.h"

namespace tide {

struct QueuedOp;  // stream.h: an op as a stream queues and runs it

class EngineBackend : public Engine {
 protected:
  explicit EngineBackend(const EngineOptions& options);

  /// Runs one queued op, the record that carries everything about it (its
  /// OpDesc, seq, step, push index, cross-stream waits, timing lane): the
  /// poison check, the kernel, error capture, and around the kernel the
  /// run's observers (stats, NVTX range, flight record, trace). A non-null
  /// `skip_reason` skips the kernel and poisons the outputs with it (a GPU
  /// stream that could not order or launch the op). Sets op.trace_slot (the
  /// trace event's place, for settle_trace(), or -1).
  void run_op(QueuedOp& op, int stream_index, void* native_stream, const char* skip_reason = nullptr);
  /// The same for `desc` run in place (the naive engine's, on the
  /// frontend's own stack): `record` gives the rest (its desc is unused).
  void run_op(OpDesc& desc, QueuedOp& record, int stream_index, void* native_stream,
              const char* skip_reason = nullptr);
  /// A GPU stream's completion thread, once the op is done: its trace event
  /// at `slot` (run_op's) is final, and may be handed out. When `retimed`,
  /// the op ran on the device from `start_ns` to `end_ns` (the host's
  /// steady clock), which replaces its launch.
  void settle_trace(int stream_index, std::int64_t slot, bool retimed, std::int64_t start_ns, std::int64_t end_ns);
  /// A GPU fault seen after `op` ran (at its completion event) or a failed
  /// cross-stream wait: recorded as an error, and the device is marked
  /// failed, so every later barrier on it throws (CUDA faults are sticky).
  /// Any thread.
  void record_device_failure(const OpDesc& op, int stream_index, std::uint64_t seq, std::uint64_t step,
                             std::uint64_t push_index, const std::string& what, bool at_completion);

  /// Wait for each GPU op's completion inside run_op (TIDE_CUDA_SYNC=1, and
  /// always on the naive engine), so a fault fails the op that caused it.
  bool gpu_sync_after_op_ = false;
};

}  // namespace tide
