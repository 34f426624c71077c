// Stream: one ordered queue of ops with one backend worker thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <tide/core/engine.h>

#include "backend.h"
#include "spsc_queue.h"

namespace tide {


/// An op waiting in a stream's queue, with the events it must wait for.
/// Ops are recycled: a finished op travels back to the frontend, which
/// releases its storages and reuses it, so the hot path neither allocates
/// nor frees across threads.
struct QueuedOp {
  static constexpr int kMaxWaits = 16;
  OpDesc desc;
  std::uint64_t seq = 0;
  std::uint64_t step = 0;
  std::uint64_t push_index = 0;
  std::uint64_t cover = 0;  // GPU streams: the op whose completion event shows this one done (>= seq)
  std::uint64_t bytes = 0;  // memory it allocates; counted as queued until it completes
  std::uint64_t streaming_bytes = 0;  // the same, when the sync policy counts it as streaming
  StreamPoint waits[kMaxWaits]{};
  int nwaits = 0;
  // Tracing on a GPU stream: the op's trace event (set by EngineBackend::run_op;
  // -1: none), and whether its lane timed it with device events.
  std::int64_t trace_slot = -1;
  bool device_timed = false;
  // While a timed op runs: its lane, and whether the end timing event was
  // recorded (0: not yet, 1: yes, -1: failed), by the worker after the
  // kernel or earlier by the kernel itself (OpContext::launched).
  backend::Lane* timing_lane = nullptr;
  int end_recorded = 0;
  /// OpContext::on_launched for a timed op (`self` is the QueuedOp).
  static void record_end_now(void* self) {
    auto* op = static_cast<QueuedOp*>(self);
    if (op->timing_lane && op->end_recorded == 0) op->end_recorded = op->timing_lane->record_end(op->seq) ? -1 : 1;
  }

  void clear() {
    desc.fn.reset();
    desc.reads.clear();
    desc.writes.clear();
    bytes = 0;
    streaming_bytes = 0;
    nwaits = 0;
    trace_slot = -1;
    device_timed = false;
    timing_lane = nullptr;
    end_recorded = 0;
  }
};

class Stream {
 public:
  /// `run` executes one op on the worker; `completed` is called after the
  /// stream's completed count has moved.
  /// `async_failure` reports a GPU error that marks the device failed: one
  /// the GPU raised while or after running `op` (seen at its completion
  /// event, on the completion thread; `at_completion`), or one at its
  /// launch (on the worker) that leaves the stream unusable.
  struct Hooks {
    /// A non-null `skip_reason`: do not run the kernel, poison the outputs.
    virtual void run(QueuedOp& op, int stream_index, void* native_stream, const char* skip_reason) = 0;
    /// `ops` ops that allocated `bytes` in all have completed (after their
    /// counts are published).
    virtual void completed(std::uint64_t ops, std::uint64_t bytes) = 0;
    virtual void async_failure(QueuedOp& op, int stream_index, const std::string& what, bool at_completion) = 0;
    /// Whether ops are being traced (a GPU stream then times them on the device).
    virtual bool tracing() const = 0;
    /// A GPU op is done and its trace event (op.trace_slot) final; when
    /// `timed`, the op ran on the device from `start_ns` to `end_ns`
    /// (completion thread, in the stream's order).
    virtual void trace_settled(QueuedOp& op, int stream_index, bool timed, std::int64_t start_ns,
                               std::int64_t end_ns) = 0;
    virtual ~Hooks() = default;
  };

  /// A stream of `device`. On a GPU the worker launches each op on its
  /// lane's native stream (backend.h) and a completion thread moves the
  /// completed count once the GPU has run it (so barriers, the sync policy
  /// and memory see GPU completion); waits between GPU streams are the
  /// lane's event waits (cudaStreamWaitEvent on CUDA).
  Stream(Hooks& hooks, int index, Device device, StreamKind kind);
  /// A GPU stream on `lane` (a CPU stream when it is null): what the first
  /// form makes for a GPU device, and how tests run a stream on a simulated
  /// device. Its threads are named "tide-<tag>" (the worker) and
  /// "tide-<tag>-d" (a GPU stream's completion thread), cut to 15
  /// characters: the first form's tag is the device and kind ("gpu0-cmp",
  /// "cpu0-cmp"); an empty one reads "s<index>".
  Stream(Hooks& hooks, int index, std::unique_ptr<backend::Lane> lane, std::string tag = {});
  /// Joins the worker if stop() and join() were not called.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int index() const { return index_; }

  // Frontend thread only.
  QueuedOp* acquire_op();
  std::uint64_t next_seq() {
    std::uint64_t s = pushed_.load(std::memory_order_relaxed) + 1;
    pushed_.store(s, std::memory_order_relaxed);
    return s;
  }
  void enqueue(QueuedOp* op);
  /// Whether nothing pushed before the op of sequence number `seq` is
  /// queued or running: every earlier op has completed.
  bool idle_before(std::uint64_t seq) const { return completed() + 1 == seq; }
  /// Runs `op` here, on the frontend thread, as the worker would (a CPU
  /// stream, idle_before(op->seq), no waits), and recycles it. The worker
  /// is idle meanwhile: it takes the next op only from the queue.
  void run_here(QueuedOp* op);
  /// A GPU stream's op launched here, on the frontend thread, as the worker
  /// would, with an event of its own (idle_before(op->seq), no waits, not
  /// traced): a synchronous round trip then crosses no thread before the
  /// launch. The worker is idle meanwhile (every op before it has
  /// completed, so it has nothing queued or launched without an event).
  /// When the lane's device cannot be made current, the op goes to the
  /// worker instead.
  void launch_here(QueuedOp* op);
  /// Shutdown, in two phases for all streams of an engine: stop() every
  /// stream (ops queued before it still run), then join() every stream. A
  /// worker may wait on another stream's counters until its last op has run,
  /// so no stream may be destroyed before every worker has been joined.
  void stop();
  void join();
  /// Releases the storages of finished ops (on this, the frontend thread).
  void reclaim();
  /// Clears a finished op and keeps it for reuse (frontend thread).
  void recycle(QueuedOp* op);

  // Any thread.
  std::uint64_t pushed() const { return pushed_.load(std::memory_order_relaxed); }
  std::uint64_t pushed_bytes() const { return pushed_bytes_.load(std::memory_order_relaxed); }
  // seq_cst (a plain load on x86): the gate's stall pairs this load with the
  // worker's seq_cst store and its load of the gate's waiter count.
  std::uint64_t completed() const { return completed_.load(std::memory_order_seq_cst); }
  std::uint64_t completed_bytes() const { return completed_bytes_.load(std::memory_order_seq_cst); }
  std::uint64_t pushed_streaming_bytes() const { return pushed_streaming_bytes_.load(std::memory_order_relaxed); }
  std::uint64_t completed_streaming_bytes() const {
    return completed_streaming_bytes_.load(std::memory_order_seq_cst);
  }
  bool reached(std::uint64_t seq) const { return completed() >= seq; }
  /// GPU streams: how many ops have been launched and covered by an event.
  std::uint64_t launched() const { return launched_.load(std::memory_order_seq_cst); }
  /// Blocks until `seq` ops have been launched and covered by an event
  /// (GPU streams; a worker waiting for another stream's producer, the
  /// frontend at the sync policy's cap on unlaunched ops).
  void wait_launched(std::uint64_t seq);
  /// A CPU device's stream (its ops' outputs are host memory).
  bool on_host() const { return lane_ == nullptr; }
  /// Blocks until `seq` ops have completed: a short spin, on a GPU stream
  /// a poll (as long as its lane's host_poll), then sleep.
  void wait_until(std::uint64_t seq) { wait_completed(seq, true); }
  /// wait_until; `for_data` false for a wait that only paces its caller
  /// (the sync policy's step gate, the worker's own waits for its event
  /// ring's slots): it does not make the stream's runs short.
  void wait_completed(std::uint64_t seq, bool for_data);
  /// How many times a wait_until slept (was woken by a completion).
  std::uint64_t host_sleeps() const { return host_sleeps_.load(std::memory_order_relaxed); }
  /// How many times a wait_launched woke from a sleep (tests).
  std::uint64_t launch_wakeups() const { return launch_wakeups_.load(std::memory_order_relaxed); }
  /// Whether the worker sleeps, waiting for an op, and how many threads
  /// poll in wait_until now (the frontend, or a CPU stream's worker waiting
  /// for this stream's op) (tests).
  bool worker_asleep() const { return queue_.consumer_asleep(); }
  int host_pollers() const { return host_polling_.load(std::memory_order_relaxed); }
  /// The native stream of a GPU stream (cudaStream_t on CUDA), null on a
  /// CPU device.
  void* native_stream() const;

 private:
  void worker();
  /// The op's bytes join the pushed counts (frontend), or the completed
  /// ones (whoever ran it), before its completion is published.
  void count_pushed(const QueuedOp& op);
  void count_completed(std::uint64_t bytes, std::uint64_t streaming_bytes);
  void complete(std::uint64_t seq);
  /// Everything after an op has completed: bytes, recycling, waiters.
  void finish(QueuedOp* op);
  /// The same for a run of ops in stream order that completed together (an
  /// event covers them): the counts move once, by the whole run. Empties it.
  void finish_run(std::vector<QueuedOp*>& run);
  /// A GPU stream's wait for another stream's point before an op runs (a
  /// CPU stream waits for completion on the host); a wait that could not be
  /// made is returned, not thrown.
  backend::Fault gpu_wait_point(const StreamPoint& p);
  /// GPU streams: asks the worker to cover op `seq` with an event as soon as
  /// it is launched (someone waits for it).
  void want(std::uint64_t seq);
  /// GPU streams: a wait for op `seq` (its consumer's or the host's); when
  /// the op is covered, not its run's last, and not done, the worker's next
  /// runs are short.
  void note_wait(std::uint64_t seq);
  /// Worker, GPU streams: records one event after the ops launched since the
  /// last one, which then count as launched and go to the completion thread.
  void cover();
  /// Raises launched_ to `seq` (the worker's cover and launch_here).
  void publish_launched(std::uint64_t seq);
  void completion_worker();

  static constexpr std::size_t kMaxFree = 1024;

  Hooks& hooks_;
  const int index_;
  const std::string tag_;  // in the threads' names
  // Written by the frontend.
  alignas(64) std::atomic<std::uint64_t> pushed_{0};
  std::atomic<std::uint64_t> pushed_bytes_{0};
  std::atomic<std::uint64_t> pushed_streaming_bytes_{0};
  std::vector<QueuedOp*> free_;
  // Written by the worker.
  alignas(64) std::atomic<std::uint64_t> completed_{0};
  std::atomic<std::uint64_t> completed_bytes_{0};
  std::atomic<std::uint64_t> completed_streaming_bytes_{0};
  // Sleeping waiters on completed_: the lowest count one of them waits for
  // (kNobody if none), so that a completion wakes them only once one of them
  // can go on, not at every op of a long queue. Lowered by a waiter under
  // mutex_ before it checks and sleeps; reset under mutex_ with a notify_all,
  // after which every sleeper lowers it again.
  static constexpr std::uint64_t kNobody = ~std::uint64_t{0};
  alignas(64) std::atomic<std::uint64_t> wake_at_{kNobody};
  // Sleeping waiters on launched_ (GPU streams), as wake_at_ is for
  // completed_: the lowest count one of them waits for, so that a cover
  // wakes them only once one of them can go on (the frontend at the cap on
  // unlaunched ops waits for hundreds of ops, covered a run at a time).
  alignas(64) std::atomic<std::uint64_t> launch_wake_at_{kNobody};
  std::atomic<std::uint64_t> launch_wakeups_{0};  // see launch_wakeups()
  std::atomic<std::uint64_t> host_sleeps_{0};  // see host_sleeps()
  std::atomic<int> host_polling_{0};  // threads polling in wait_until (GPU streams): keeps the worker polling
  std::mutex mutex_;
  std::condition_variable cv_;         // completions (wait_until); under mutex_
  std::condition_variable launch_cv_;  // launches (wait_launched); under mutex_
  SpscQueue<QueuedOp*> queue_;     // frontend -> worker
  SpscQueue<QueuedOp*> finished_;  // worker (or completion thread) -> frontend, for reuse
  // GPU streams only.
  std::unique_ptr<backend::Lane> lane_;
  // An event is recorded after a run of launched ops, not after each: when
  // the queue is empty, before an op that waits for another stream, when
  // someone waits for one of them (wanted_, wanted_first_), after
  // kCoverEvery ops, and once the run's ops have allocated kCoverBytes.
  // Recording an event costs the host about what a launch does, so a run
  // of tiny ops is long; a run of large ops is cut by its bytes, so that
  // their memory returns as soon as they are done rather than with the
  // run's last op.
  static constexpr std::size_t kCoverEvery = 128;
  static constexpr std::uint64_t kCoverBytes = std::uint64_t{64} << 20;
  // A wait for an op already covered but not done, and not its run's last,
  // lands on its run's event, after the run's later ops too (a consumer
  // stream's cudaStreamWaitEvent, a host's wait); so does a request for an
  // op launched kShortRun or more ops before the worker saw it. Such a late
  // wait makes the worker cut its runs at kShortRun ops for kShortCovers
  // events, as a stream that others wait on keeps its dependencies
  // fine-grained. Set by the waiter (or the worker), taken by the worker at
  // its next cover.
  static constexpr std::size_t kShortRun = 32;
  static constexpr std::uint64_t kShortCovers = 128;
  std::atomic<bool> late_wait_{false};
  std::uint64_t short_covers_left_ = 0;  // worker only
  // The op each event slot was last recorded after (GPU streams; written by
  // the worker at a cover, read by waiters): a wait for an op that ends its
  // run lands on its own event and is not late.
  std::unique_ptr<std::atomic<std::uint64_t>[]> run_end_;
  // How long a GPU stream's worker and completion thread poll their queues
  // before they sleep (a host waiter for its ops: lane_->host_poll(); the
  // worker polls on while such a waiter polls, and this long after).
  static constexpr std::chrono::microseconds kGpuPoll{50};
  std::vector<QueuedOp*> uncovered_;  // worker only: launched, no event after them yet
  std::uint64_t uncovered_bytes_ = 0;  // worker only: what uncovered_'s ops allocated
  alignas(64) std::atomic<std::uint64_t> launched_{0};  // written by the worker: launched and covered
  // The latest op a waiter asked to be covered (0: none yet); raised by
  // waiters. And the earliest one asked for and not yet covered (kNobody:
  // none): lowered by waiters, taken over by a waiter when it holds an op
  // already covered, cleared by the worker's cover. So with two waiters
  // both are served when their ops are launched; with three or more, one
  // in the middle may wait for the next cover at the latest kCoverEvery
  // ops on (or for the queue to run dry).
  std::atomic<std::uint64_t> wanted_{0};
  std::atomic<std::uint64_t> wanted_first_{kNobody};
  // The latest op a host thread waits to see completed (wait_until; 0:
  // none yet), raised by the waiter: the completion thread polls rather
  // than sleeps while it waits for that op or one before it.
  std::atomic<std::uint64_t> host_wants_{0};
  SpscQueue<QueuedOp*> inflight_;  // worker -> completion thread
  std::thread completer_;
  std::thread thread_;
};

}  // namespace tide
