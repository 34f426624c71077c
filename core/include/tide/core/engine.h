// Engine: takes ops (closures over read and write sets of storages), tracks
// the dependencies between them and runs them on per-device streams.
//
// Thread safety: an engine has one frontend thread, the first thread that
// pushes to it. push, barriers, step() and the stream scope must be called
// from that thread (another thread gets tide::UsageError). stats() may be
// called from any thread.
//
// This is the API programs use. What an op hands the engine (OpDesc, its
// kernel, read and write sets) and what its kernel sees (OpContext) are the
// backend contract, in <tide/core/op.h>, included here for Engine::push.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <tide/core/device.h>
#include <tide/core/loc.h>
#include <tide/core/op.h>
#include <tide/core/stats.h>
#include <tide/core/storage.h>
#include <tide/core/sync_policy.h>
#include <tide/core/trace.h>

namespace tide {

enum class EngineKind { async, naive };
const char* engine_kind_name(EngineKind k);

struct EngineOptions {
  EngineKind kind = EngineKind::async;
  int cpu_devices = 1;
  /// GPUs cuda:0..n-1; -1 means every GPU this process sees
  /// (cuda_device_count(), 0 on a machine without one). Asking for more
  /// than there are throws tide::DeviceError.
  int cuda_devices = -1;
  SyncPolicy policy;

  /// Reads TIDE_ENGINE (async|naive), TIDE_CPU_DEVICES (1..64) and
  /// TIDE_CUDA_DEVICES (0..64) over the defaults; throws tide::ValueError on
  /// a bad value.
  static EngineOptions from_env();
};

class Engine;

/// A minibatch, from construction to destruction. See SyncPolicy.
class Step {
 public:
  Step(Step&& o) noexcept : engine_(o.engine_), index_(o.index_) { o.engine_ = nullptr; }
  Step& operator=(Step&&) = delete;
  ~Step();
  std::uint64_t index() const { return index_; }

 private:
  friend class Engine;
  Step(Engine* e, std::uint64_t index) : engine_(e), index_(index) {}
  Engine* engine_;
  std::uint64_t index_;
};

class Engine {
 public:
  /// Builds an async or naive engine. Workers start at once.
  static std::unique_ptr<Engine> create(const EngineOptions& options = EngineOptions::from_env());
  virtual ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  std::uint64_t id() const { return id_; }
  virtual EngineKind kind() const = 0;
  const std::vector<Device>& devices() const { return devices_; }
  /// Throws tide::DeviceError when `d` is not one of devices().
  void check_device(Device d) const;
  /// The position of `d` in devices(): CPU devices first, then GPUs.
  int device_slot(Device d) const { return d.is_cpu() ? d.index : cpu_devices_ + d.index; }

  /// Allocates storage on `device` owned by this engine (no op is queued).
  std::shared_ptr<Storage> allocate(Device device, std::size_t nbytes);

  /// Enqueues `op` and returns; may block only at the sync-policy gate.
  /// Throws tide::Error for a malformed op (unknown device, storages of
  /// another engine or device) before anything is enqueued.
  void push(OpDesc&& op);

  /// Blocks until the last op writing `s` has run; rethrows its error.
  void wait_for(const Storage& s, const char* kind = "wait_to_read",
                Loc loc = Loc::current());
  /// Blocks until every pushed op has run; rethrows the first error not yet
  /// reported at a barrier.
  void wait_all(Loc loc = Loc::current());
  /// Counts a host-blocking call (for blockers that wait through wait_for).
  void record_blocker(const char* kind, Loc loc, std::int64_t ns);

  /// Marks a minibatch; may block at the in-flight-steps gate.
  Step step(Loc loc = Loc::current());

  void set_policy(const SyncPolicy& p);
  const SyncPolicy& policy() const { return policy_; }

  /// The stream kind ops use when they do not choose one.
  StreamKind stream_kind() const { return stream_kind_; }
  void set_stream_kind(StreamKind k) { stream_kind_ = k; }

  /// Philox state for creation ops: the seed, and a counter offset that each
  /// random op advances on the frontend (so results do not depend on streams).
  void manual_seed(std::uint64_t seed) { rng_seed_ = seed; rng_offset_ = 0; }
  std::uint64_t rng_seed() const { return rng_seed_; }
  std::uint64_t take_rng_offset(std::uint64_t count) {
    std::uint64_t o = rng_offset_;
    rng_offset_ += count;
    return o;
  }

  Stats stats() const;
  void reset_stats();
  /// Ops pushed so far: the push index the next op will get (frontend).
  std::uint64_t pushed() const { return push_count_; }

  /// The timeline: while tracing is on, every op run records a TraceEvent
  /// (a lock per op, uncontended; off by default). take_trace() returns the
  /// events of the ops completed so far, sorted by start, and clears them;
  /// call wait_all() first for a complete picture. On a GPU stream of the
  /// async engine an event is handed out only once its op has completed
  /// and its device times are in (so never a launch time that is about to
  /// change); later ones stay for the next call. At most 1M events per
  /// stream are kept; trace_dropped() counts the rest.
  void set_tracing(bool on);
  bool tracing() const { return tracing_.load(std::memory_order_relaxed); }
  std::vector<TraceEvent> take_trace();
  /// Where read_trace() left off: a place in each stream's whole trace.
  using TraceCursor = std::vector<std::size_t>;
  /// The events of the ops completed since `cursor` (sorted by start; the
  /// same rule as take_trace() for GPU streams), copied: they stay for
  /// take_trace() and write_trace(). Advances `cursor`. For a reader that
  /// must leave the timeline whole (one that goes to a file). Events
  /// take_trace() removed in between are not seen.
  std::vector<TraceEvent> read_trace(TraceCursor& cursor);
  /// The frontend's side of the timeline (see FrontendEvent), in order, and
  /// cleared; at most 1M events are kept.
  std::vector<FrontendEvent> take_frontend_trace();
  std::uint64_t trace_dropped() const;
  /// Waits for every queued op (reporting no error), then takes both
  /// timelines and writes them to `path` as Chrome trace-event
  /// JSON (Perfetto and chrome://tracing open it): process `pid` named
  /// `process_name`, a track per stream with a span per op (its name, seq,
  /// push index, step and call site), arrows from producer to consumer
  /// across streams, and a frontend track with blockers, stalls and step
  /// beginnings. Times are steady_clock microseconds. `tide_json`, when
  /// not empty, is a JSON value written as the file's top-level "tide"
  /// member (the Runtime puts its rank and clock samples there; viewers
  /// ignore it). Throws tide::Error if the file cannot be written.
  void write_trace(const std::string& path, int pid = 0, const std::string& process_name = "tide",
                   const std::string& tide_json = "");
  /// "cpu:0/compute" for a stream index of this engine.
  std::string stream_name(int stream_index) const;
  /// The number of stream indices (devices x stream kinds).
  int stream_count() const noexcept;
  /// What a stream's worker is doing, read from a few atomics the worker
  /// stores around every op (any thread; async-signal-safe; fields may be
  /// a moment apart): the op it runs now (null: none) and since when, the
  /// last one it finished and when (steady_clock ns), and how many ran.
  /// The flight recorder's "what each rank was doing".
  struct StreamActivity {
    const char* running = nullptr;
    std::int64_t since_ns = 0;
    const char* last = nullptr;
    std::int64_t last_end_ns = 0;
    std::uint64_t ops = 0;
  };
  StreamActivity activity(int stream_index) const noexcept;

  /// Skips every op not yet started (their outputs are poisoned with a
  /// cancellation error) and waits for the ones running. The engine stays
  /// usable. Errors recorded so far are dropped.
  virtual void cancel_pending() = 0;
  /// True while cancel_pending() is skipping work (any thread may ask).
  bool cancelling() const { return cancelling_.load(std::memory_order_acquire); }

 protected:
  // What a backend overrides and shares with the front half. What it calls
  // to run an op and keep its records is EngineBackend's (internal to core,
  // core/src/engine_backend.h), the base of the async and naive engines.
  explicit Engine(const EngineOptions& options);

  struct Counters;  // shared with the backends
  friend class Step;
  void end_step(std::uint64_t index) noexcept;

  /// The backend part of push: called after validation.
  virtual void submit(OpDesc&& op, int stream_index, std::uint64_t push_index) = 0;
  virtual void wait_storage(const Storage& s) = 0;
  virtual void wait_everything() = 0;
  /// Step hooks: begin_step counts the steps in flight (and, for the async
  /// engine, waits while there are `cap` of them; 0 is no cap). The naive
  /// engine never queues: one step is in flight, the one beginning.
  virtual void begin_step(std::uint32_t cap);
  virtual void mark_step_end() {}
  /// Fills ops_completed, queued_ops and queued_bytes.
  virtual void backend_stats(Stats& out) const = 0;

  /// Frontend: records `e` when tracing (blockers, stalls, steps).
  void trace_frontend(FrontendEvent e);
  /// Throws the error poisoning `s`, if any, marking it reported.
  void rethrow_poison(const Storage& s);
  /// Throws the failure recorded for `d`, or else for any other device:
  /// values a faulted GPU made may have reached `d` unmarked.
  void rethrow_device_failure(Device d);
  void rethrow_first_unreported();
  void drop_errors();
  std::uint64_t current_step() const { return step_index_; }
  void check_frontend_thread();

  std::vector<Device> devices_;
  int cpu_devices_ = 0;
  SyncPolicy policy_;
  std::unique_ptr<Counters> counters_;
  std::atomic<bool> cancelling_{false};
  std::atomic<bool> tracing_{false};
  std::atomic<bool> device_failed_{false};
  /// The frontend thread is running a kernel itself (the async engine's
  /// small memory-bound ops): a kernel that pushes, waits or steps is
  /// refused, as it is on a worker.
  bool running_kernel_here_ = false;

 private:
  std::uint64_t id_;
  StreamKind stream_kind_ = StreamKind::compute;
  std::uint64_t rng_seed_ = 0;
  std::uint64_t rng_offset_ = 0;
  std::uint64_t step_index_ = 0;
  bool in_step_ = false;
  /// The first thread to use the engine; two threads starting at once race
  /// for it, so it is claimed with a compare-exchange.
  std::atomic<std::thread::id> frontend_thread_{};
  std::uint64_t push_count_ = 0;
  /// Pushing the copies that keep mirrors equal to their sources
  /// (<tide/core/mirror.h>): those pushes start no copies themselves.
  bool syncing_mirrors_ = false;
  /// push's tail for an op that writes a mirror or a block with mirrors.
  void submit_and_sync_mirrors(OpDesc&& op, int stream_index, std::uint64_t push_index);
};

/// The engine ops use by default: the innermost live EngineScope (a Runtime
/// holds one). With none, the fallback below is asked once per call (the
/// Python module makes a runtime on first use there); throws
/// tide::UsageError when there is still none.
Engine& current_engine();
Engine* current_engine_or_null();
/// What current_engine() calls when no engine is active: it may make one
/// current (and return it) or return null. nullptr: none (the default).
/// Called on the thread that asked, not re-entered.
using EngineFallback = Engine* (*)();
void set_engine_fallback(EngineFallback f);

/// Makes `e` the current engine for its lifetime (scopes nest).
class EngineScope {
 public:
  explicit EngineScope(Engine& e);
  ~EngineScope();
  EngineScope(const EngineScope&) = delete;
  EngineScope& operator=(const EngineScope&) = delete;

 private:
  Engine* prev_;
};

/// Ops pushed while it lives (from the frontend thread) go to streams of kind
/// `k` on their device, unless the op chooses its stream itself.
class StreamScope {
 public:
  explicit StreamScope(StreamKind k, Engine& e = current_engine());
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  Engine& engine_;
  StreamKind prev_;
};

}  // namespace tide
