// SyncPolicy: how far the frontend may run ahead of the backend.
#pragma once

#include <cstdint>
#include <string>

namespace tide {

/// Caps on queued work. A push that would cross a cap blocks (a counted,
/// timed "runahead stall") until the backend has drained below the low water
/// mark (`low_water` times the cap). Zero means unbounded.
struct SyncPolicy {
  /// The default op cap: generous, so a plain loop runs far ahead, yet it
  /// keeps a runaway loop from eating all memory.
  static constexpr std::uint64_t kDefaultMaxQueuedOps = 1u << 20;
  /// The default max_unlaunched_gpu_ops: about the queue of pending
  /// launches a CUDA stream keeps itself.
  static constexpr std::uint64_t kDefaultMaxUnlaunchedGpuOps = 1024;
  /// The default cap on streaming host bytes (see max_streaming_host_bytes):
  /// twice default_streaming_op_bytes().
  static std::uint64_t default_max_streaming_host_bytes();
  /// The default cap on all host bytes queued: a 64th of RAM and swap, at
  /// most 256 MiB, a quarter of the caching allocator's default limit, so
  /// that what is queued and what the low-water drain frees both stay within
  /// what it keeps (nothing is page-faulted).
  static std::uint64_t default_max_queued_host_bytes();
  /// The default size of a streaming op's outputs: the processor's level-2
  /// cache (per core), within [256 KiB, 2 MiB]; 1 MiB where it is not known.
  static std::uint64_t default_streaming_op_bytes();
  /// The default inline_op_bytes: TIDE_INLINE_OP_KB KiB when set (0 turns
  /// it off; anything but a whole number is a ValueError), else twice a
  /// core's level-2 cache (default_max_streaming_host_bytes()).
  static std::uint64_t default_inline_op_bytes();

  /// Step n+k may not begin until step n has completed on every stream.
  std::uint32_t max_inflight_steps = 0;
  /// Ops pushed and not yet completed, over all streams.
  std::uint64_t max_queued_ops = kDefaultMaxQueuedOps;
  /// Ops pushed to one GPU stream and not yet launched by its worker. A
  /// GPU launches no faster for a longer backlog (the driver's own queue of
  /// pending launches is about this long), while its worker then reads ops,
  /// storages and closures the frontend wrote thousands of ops before, out
  /// of the caches: on two H200s a loop of tiny ops took 8% and 14% less
  /// time per op with the frontend at most 1,024 ops ahead than 16,000
  /// ahead, and the worker's own time around each launch about half. Past
  /// the cap the frontend waits until the backlog is down to `low_water` of
  /// it (a stall, counted with the ops stalls). CPU streams are not held by
  /// it. An op that holds its GPU stream's worker on the host until the
  /// frontend acts must not have this many ops pushed behind it first.
  std::uint64_t max_unlaunched_gpu_ops = kDefaultMaxUnlaunchedGpuOps;
  /// Bytes allocated by ops pushed and not yet completed, on any device.
  std::uint64_t max_queued_bytes = 0;
  /// The same, for ops on CPU devices' streams only: the memory bound.
  std::uint64_t max_queued_host_bytes = default_max_queued_host_bytes();
  /// The same again, counting only streaming ops: ops on CPU devices'
  /// streams whose outputs total at most `streaming_op_bytes`. On a CPU the
  /// backend is the bottleneck of a loop of such ops, and running further
  /// ahead only makes it cycle through more memory: within this cap their
  /// outputs are reused while still in the processor's cache. Larger
  /// outputs are not held back by it (they do not fit in a core's cache
  /// anyway, and running ahead of them is what async is for).
  std::uint64_t max_streaming_host_bytes = default_max_streaming_host_bytes();
  /// The largest outputs of a streaming op.
  std::uint64_t streaming_op_bytes = default_streaming_op_bytes();
  /// A memory-bound op (OpDesc::memory_bound) on a CPU device whose inputs
  /// and outputs total at most this many bytes runs at once on the frontend
  /// thread when its stream has nothing queued or running and every op it
  /// depends on has completed: there is nothing to run ahead of, and the
  /// hand-off to the worker (the op's record crossing cores, a wake-up, its
  /// data moving to the worker's cache) would cost more than the op. Its
  /// results, errors and order are those of the worker. On a GPU, such an
  /// op of any size on a stream that has completed everything before it is
  /// launched by the frontend, unless tracing. 0: never, on any device. The
  /// default is default_inline_op_bytes().
  std::uint64_t inline_op_bytes = default_inline_op_bytes();
  /// Resume below this fraction of a cap, in (0, 1].
  double low_water = 0.5;

  /// Throws tide::PolicyError when a field is out of range.
  void validate() const;
  std::string str() const;

  static SyncPolicy unbounded() {
    SyncPolicy p;
    p.max_queued_ops = 0;
    p.max_unlaunched_gpu_ops = 0;
    p.max_queued_host_bytes = 0;
    p.max_streaming_host_bytes = 0;
    return p;
  }
  static SyncPolicy steps(std::uint32_t k) {
    SyncPolicy p;
    p.max_inflight_steps = k;
    return p;
  }
};

}  // namespace tide
