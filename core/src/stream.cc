#include "stream.h"

#include <pthread.h>

#include <cstdio>
#include <string>

#include <tide/core/assert.h>
#include <tide/core/stream_worker.h>

#include "backend.h"

namespace tide {

namespace {
/// "gpu0-cmp", "cpu0-cpy", "gpu1-comm": a device and a stream kind, short
/// enough for a thread's name.
std::string stream_tag(Device device, StreamKind kind) {
  static constexpr const char* kKinds[kStreamKinds] = {"cmp", "cpy", "comm"};
  return (device.is_cuda() ? "gpu" : "cpu") + std::to_string(device.index) + "-" + kKinds[static_cast<int>(kind)];
}
}  // namespace

Stream::Stream(Hooks& hooks, int index, Device device, StreamKind kind)
    : Stream(hooks, index, device.is_cuda() ? backend::make_lane(device.index, kind) : nullptr,
             stream_tag(device, kind)) {}

Stream::Stream(Hooks& hooks, int index, std::unique_ptr<backend::Lane> lane, std::string tag)
    : hooks_(hooks), index_(index), tag_(tag.empty() ? "s" + std::to_string(index) : std::move(tag)),
      lane_(std::move(lane)) {
  if (lane_) {
    uncovered_.reserve(kCoverEvery);
    run_end_ = std::make_unique<std::atomic<std::uint64_t>[]>(backend::Lane::kRing);
    for (std::uint64_t i = 0; i < backend::Lane::kRing; ++i) run_end_[i].store(0, std::memory_order_relaxed);
    queue_.set_poll(kGpuPoll);
    inflight_.set_poll(kGpuPoll);
    completer_ = std::thread([this] { completion_worker(); });
  }
  thread_ = std::thread([this] { worker(); });
}

Stream::~Stream() {
  if (thread_.joinable()) {
    stop();
    join();
  }
  reclaim();
  for (QueuedOp* op : free_) delete op;
}

void* Stream::native_stream() const { return lane_ ? lane_->native() : nullptr; }

void Stream::stop() { queue_.push(nullptr); }  // a sentinel: everything before it runs first

void Stream::join() {
  thread_.join();
  if (completer_.joinable()) completer_.join();  // the worker sent it a sentinel
}

QueuedOp* Stream::acquire_op() {
  reclaim();
  if (free_.empty()) return new QueuedOp;
  QueuedOp* op = free_.back();
  free_.pop_back();
  return op;
}

void Stream::reclaim() {
  QueuedOp* op = nullptr;
  while (finished_.try_pop(op)) recycle(op);
}

void Stream::recycle(QueuedOp* op) {
  op->clear();  // drops its storages: memory is freed here, on the frontend
  if (free_.size() < kMaxFree) {
    free_.push_back(op);
  } else {
    delete op;
  }
}

void Stream::count_pushed(const QueuedOp& op) {
  if (op.bytes) pushed_bytes_.store(pushed_bytes() + op.bytes, std::memory_order_relaxed);
  if (op.streaming_bytes)
    pushed_streaming_bytes_.store(pushed_streaming_bytes() + op.streaming_bytes, std::memory_order_relaxed);
}

void Stream::count_completed(std::uint64_t bytes, std::uint64_t streaming_bytes) {
  if (bytes)
    completed_bytes_.store(completed_bytes_.load(std::memory_order_relaxed) + bytes, std::memory_order_seq_cst);
  if (streaming_bytes)
    completed_streaming_bytes_.store(completed_streaming_bytes_.load(std::memory_order_relaxed) + streaming_bytes,
                                     std::memory_order_seq_cst);
}

void Stream::enqueue(QueuedOp* op) {
  count_pushed(*op);
  queue_.push(op);
}

void Stream::run_here(QueuedOp* op) {
  TIDE_INTERNAL_ASSERT(!lane_ && op->nwaits == 0 && idle_before(op->seq),
                       "an op run here must be next on an idle CPU stream");
  count_pushed(*op);
  // As on the worker, where an exception escaping the op's run ends the
  // process: run_op catches the kernel's own, so only its bookkeeping's
  // could (out of memory for an error's record), and a stream whose count
  // never reaches its pushes would hang every barrier instead.
  [&]() noexcept { hooks_.run(*op, index_, nullptr, nullptr); }();
  count_completed(op->bytes, op->streaming_bytes);
  complete(op->seq);
  hooks_.completed(1, op->bytes);
  recycle(op);  // at once: this is the thread that reclaims
}

void Stream::launch_here(QueuedOp* op) {
  TIDE_INTERNAL_ASSERT(lane_ && op->nwaits == 0 && idle_before(op->seq),
                       "an op launched here must be next on an idle GPU stream");
  int previous = -1;
  try {
    previous = lane_->enter();
  } catch (const std::exception&) {
    enqueue(op);  // the worker's thread has the device bound: it reports what fails there
    return;
  }
  count_pushed(*op);
  // Every op before this one has completed, so the worker has pushed them
  // all to inflight_ (before they could complete) and has nothing launched
  // without an event: the producer side of inflight_ is this thread's until
  // its next push to the queue, which publishes it to the worker (only the
  // worker's last store of launched_ may still land: publish_launched).
  // Op seq - kRing is done, so its event slot may be recorded.
  [&]() noexcept { hooks_.run(*op, index_, lane_->native(), nullptr); }();
  const backend::Fault rec = lane_->record(op->seq);
  lane_->restore(previous);
  // Without its event the op's completion cannot be seen: the stream is
  // lost, whatever the error (as in cover()).
  if (rec) hooks_.async_failure(*op, index_, rec.what, false);
  op->cover = op->seq;
  run_end_[op->seq % backend::Lane::kRing].store(op->seq, std::memory_order_relaxed);
  inflight_.push(op);
  publish_launched(op->seq);
}

void Stream::publish_launched(std::uint64_t seq) {
  // A raise, never a store: the worker's cover() publishes its ops after
  // pushing them to the completion thread, which may complete them first,
  // so this thread may launch the next op before the worker's store lands.
  std::uint64_t at = launched_.load(std::memory_order_seq_cst);
  while (at < seq && !launched_.compare_exchange_weak(at, seq, std::memory_order_seq_cst)) {
  }
  // The earliest request is served once its op is covered. After the store
  // above: a waiter that finds it covered (it reads launched_) takes the
  // slot over, and this clear then fails and leaves the new request.
  std::uint64_t first = wanted_first_.load(std::memory_order_seq_cst);
  while (first <= seq && !wanted_first_.compare_exchange_weak(first, kNobody, std::memory_order_seq_cst)) {
  }
}

namespace {
/// Raises `a` to `seq` (never lowers it).
void raise_to(std::atomic<std::uint64_t>& a, std::uint64_t seq) {
  std::uint64_t at = a.load(std::memory_order_seq_cst);
  while (at < seq && !a.compare_exchange_weak(at, seq, std::memory_order_seq_cst)) {
  }
}
}  // namespace

void Stream::note_wait(std::uint64_t seq) {
  // Late: covered, not done, and not its run's last (its wait then lands on
  // an event after later ops).
  if (launched() < seq || reached(seq) || late_wait_.load(std::memory_order_relaxed)) return;
  if (run_end_[seq % backend::Lane::kRing].load(std::memory_order_relaxed) == seq) return;
  late_wait_.store(true, std::memory_order_relaxed);
}

void Stream::want(std::uint64_t seq) {
  raise_to(wanted_, seq);
  // Covered already: nothing to ask (and the earliest request kept below
  // must not give way to it).
  if (seq <= launched()) return;
  // Lowered to seq, or taken over when it holds an op already covered (a
  // request served whose clear has not landed yet).
  std::uint64_t first = wanted_first_.load(std::memory_order_seq_cst);
  for (;;) {
    const bool served = first != kNobody && first <= launched_.load(std::memory_order_seq_cst);
    if (seq >= first && !served) return;
    if (wanted_first_.compare_exchange_weak(first, seq, std::memory_order_seq_cst)) return;
  }
}

void Stream::wait_completed(std::uint64_t seq, bool for_data) {
  if (reached(seq)) return;
  if (lane_) {
    if (for_data) note_wait(seq);
    want(seq);
    raise_to(host_wants_, seq);
  }
  // A short spin catches ops that are about to finish without a sleep and a
  // wake-up (tens of microseconds); past it the waiter sleeps, so a long wait
  // costs no CPU.
  for (int i = 0; i < 256; ++i) {
    TIDE_CPU_RELAX();
    if (reached(seq)) return;
  }
  if (lane_) {
    // Poll (yielding the core) before paying for a sleep and a wake-up, as
    // a CUDA synchronize spins by default: the completion thread polls the
    // device meanwhile (wait_done), and a sleep here would add the wake-up
    // it saves back on this side, at the end of every burst the host waits
    // for (10 x (randn + matmul) of 1000^2 takes 0.6 ms on an H200).
    // Meanwhile the worker polls its queue too rather than sleeping
    // (worker()): the ops the host pushes once its wait ends would otherwise
    // wait for the worker's wake-up, tens of microseconds in which the
    // device runs dry.
    struct Polling {
      std::atomic<int>& n;
      explicit Polling(std::atomic<int>& c) : n(c) { n.fetch_add(1, std::memory_order_relaxed); }
      ~Polling() { n.fetch_sub(1, std::memory_order_relaxed); }
      Polling(const Polling&) = delete;
      Polling& operator=(const Polling&) = delete;
    } polling(host_polling_);
    const auto until = std::chrono::steady_clock::now() + lane_->host_poll();
    do {
      std::this_thread::yield();
      if (reached(seq)) return;
    } while (std::chrono::steady_clock::now() < until);
  }
  host_sleeps_.fetch_add(1, std::memory_order_relaxed);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // seq_cst on both sides (see complete): the worker either stores the
    // count before this load, or loads wake_at_ after this lowering.
    std::uint64_t at = wake_at_.load(std::memory_order_seq_cst);
    while (seq < at && !wake_at_.compare_exchange_weak(at, seq, std::memory_order_seq_cst)) {
    }
    if (completed_.load(std::memory_order_seq_cst) >= seq) return;
    cv_.wait(lock);
  }
}

void Stream::wait_launched(std::uint64_t seq) {
  auto done = [&] { return launched_.load(std::memory_order_seq_cst) >= seq; };
  if (done()) return;
  want(seq);
  for (int i = 0; i < 256; ++i) {
    TIDE_CPU_RELAX();
    if (done()) return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // As in wait_until, with cover() on the other side: the worker either
    // publishes the count before this check, or loads launch_wake_at_
    // after this lowering and notifies.
    std::uint64_t at = launch_wake_at_.load(std::memory_order_seq_cst);
    while (seq < at && !launch_wake_at_.compare_exchange_weak(at, seq, std::memory_order_seq_cst)) {
    }
    if (done()) return;
    launch_cv_.wait(lock);
    launch_wakeups_.fetch_add(1, std::memory_order_relaxed);
  }
}

void Stream::complete(std::uint64_t seq) {
  // seq_cst on both sides: a waiter either sees the new count before it
  // sleeps, or has lowered wake_at_ to at most `seq` and gets the notify.
  // The sleepers woken whose count is not reached lower it again.
  completed_.store(seq, std::memory_order_seq_cst);
  if (wake_at_.load(std::memory_order_seq_cst) <= seq) {
    std::lock_guard<std::mutex> lock(mutex_);
    wake_at_.store(kNobody, std::memory_order_seq_cst);
    cv_.notify_all();
  }
}

void Stream::finish(QueuedOp* op) {
  const std::uint64_t seq = op->seq, bytes = op->bytes;
  count_completed(bytes, op->streaming_bytes);
  finished_.push(op);  // the op is the frontend's again from here
  complete(seq);
  hooks_.completed(1, bytes);
}

void Stream::finish_run(std::vector<QueuedOp*>& run) {
  if (run.empty()) return;
  std::uint64_t bytes = 0, streaming_bytes = 0;
  for (const QueuedOp* op : run) {
    bytes += op->bytes;
    streaming_bytes += op->streaming_bytes;
  }
  const std::uint64_t last = run.back()->seq, ops = run.size();
  count_completed(bytes, streaming_bytes);
  for (QueuedOp* op : run) finished_.put(op);
  finished_.publish();  // the ops are the frontend's again from here
  run.clear();
  complete(last);
  hooks_.completed(ops, bytes);
}

backend::Fault Stream::gpu_wait_point(const StreamPoint& p) {
  if (p.stream->lane_) {
    // GPU after GPU: once the producer is launched, its event orders the
    // two streams on the device; the host does not wait for the GPU.
    p.stream->note_wait(p.seq);
    p.stream->wait_launched(p.seq);
    return p.stream->lane_->make_wait(p.seq, lane_->native(), p.stream->completed_);
  }
  p.stream->wait_until(p.seq);  // a CPU producer: the host waits for completion
  return {};
}

namespace {
thread_local bool t_stream_worker = false;

/// Names the calling thread for tools that list threads (top -H, perf, a
/// debugger): "tide-<tag><suffix>", cut to the 15 characters a name holds
/// (failing only loses the name).
void name_thread(const std::string& tag, const char* suffix) {
  char name[16];
  std::snprintf(name, sizeof name, "tide-%s%s", tag.c_str(), suffix);
  pthread_setname_np(pthread_self(), name);
}
}  // namespace

bool on_stream_worker() noexcept { return t_stream_worker; }

void Stream::worker() {
  t_stream_worker = true;
  name_thread(tag_, "");
  std::string device_error;
  if (lane_) {
    try {
      lane_->bind_thread();
    } catch (const std::exception& e) {
      device_error = e.what();
    }
  }
  // Whether a waiter asked for an op launched and not yet covered: the
  // latest op asked for, or the earliest.
  // When the op asked for lies kShortRun or more ops before the run's last
  // (launched well before the waiter asked), the waiter was late: runs go
  // short, as note_wait makes them for a wait after the cover.
  auto wanted_now = [&] {
    if (uncovered_.empty()) return false;
    const std::uint64_t lo = uncovered_.front()->seq, hi = uncovered_.back()->seq;
    const std::uint64_t w = wanted_.load(std::memory_order_seq_cst);
    const std::uint64_t f = wanted_first_.load(std::memory_order_seq_cst);
    const bool in_w = w >= lo && w <= hi, in_f = f >= lo && f <= hi;
    if ((in_w && hi - w >= kShortRun) || (in_f && hi - f >= kShortRun))
      late_wait_.store(true, std::memory_order_relaxed);
    return in_w || in_f;
  };
  for (;;) {
    QueuedOp* op = nullptr;
    if (!queue_.try_pop(op)) {
      // Nothing more to launch now: what was launched gets its event before
      // the worker waits for more.
      if (!uncovered_.empty()) cover();
      // Spins briefly, then sleeps; a GPU stream's worker polls for
      // kGpuPoll first, and on while a host thread polls in a wait for this
      // stream's ops (wait_until), and kGpuPoll after.
      op = queue_.pop([this] { return host_polling_.load(std::memory_order_relaxed) > 0; });
    }
    if (!op) break;
    if (lane_) {
      // An op that waits for another stream may block here, and one that is
      // not launch-only may block in its kernel (a collective waiting for
      // its peers): nothing launched may be left without an event meanwhile
      // (whoever it waits for may be waiting for those ops in turn).
      if (!uncovered_.empty() && (op->nwaits > 0 || !op->desc.launch_only || wanted_now())) cover();
      std::string error = device_error;
      bool sticky = !device_error.empty();
      try {
        for (int i = 0; i < op->nwaits; ++i) {
          if (backend::Fault f = gpu_wait_point(op->waits[i])) {
            error = std::move(f.what);
            sticky = f.sticky;
            break;
          }
        }
      } catch (const std::exception& e) {
        error = e.what();
      }
      // A failed wait leaves the op unordered: it must not run. Its outputs
      // are poisoned with the reason; a sticky error also marks the device
      // failed (first, so that the skip is not reported a second time).
      if (sticky) hooks_.async_failure(*op, index_, error, false);
      // Tracing: the op's span is the device's, between two timing events
      // around its launch (a failure to record them only loses the timing).
      // Their slots held op seq - kRing's, which must be done (and its span
      // read) before they are recorded again.
      const bool tracing = error.empty() && hooks_.tracing();
      if (tracing && op->seq > backend::Lane::kRing) wait_completed(op->seq - backend::Lane::kRing, false);
      const bool timed = tracing && !lane_->record_begin(op->seq);
      op->timing_lane = timed ? lane_.get() : nullptr;
      op->end_recorded = 0;
      hooks_.run(*op, index_, lane_->native(), error.empty() ? nullptr : error.c_str());
      QueuedOp::record_end_now(op);  // unless the kernel did, after its launch
      op->device_timed = timed && op->trace_slot >= 0 && op->end_recorded == 1;
      op->timing_lane = nullptr;
      uncovered_.push_back(op);
      uncovered_bytes_ += op->bytes;
      const bool short_runs = short_covers_left_ > 0 || late_wait_.load(std::memory_order_relaxed);
      if (uncovered_.size() >= (short_runs ? kShortRun : kCoverEvery) || uncovered_bytes_ >= kCoverBytes ||
          !error.empty() || wanted_now())
        cover();
      continue;
    }
    // A CPU stream: the host waits for each producer's completion.
    for (int i = 0; i < op->nwaits; ++i) op->waits[i].stream->wait_until(op->waits[i].seq);
    hooks_.run(*op, index_, nullptr, nullptr);
    finish(op);
  }
  if (lane_) {
    if (!uncovered_.empty()) cover();
    inflight_.push(nullptr);  // the completion thread drains, then ends
  }
}

void Stream::cover() {
  QueuedOp* last = uncovered_.back();
  const std::uint64_t seq = last->seq;
  // The event's slot held op seq - kRing's (or an earlier op's, when that
  // one had none): it must be done. It is covered already, since a run of
  // uncovered ops is shorter than the ring.
  if (seq > backend::Lane::kRing) wait_completed(seq - backend::Lane::kRing, false);
  // Without its event the ops' completion cannot be seen: the stream is
  // lost, whatever the error.
  if (backend::Fault rec = lane_->record(seq)) hooks_.async_failure(*last, index_, rec.what, false);
  for (QueuedOp* op : uncovered_) {
    op->cover = seq;
    inflight_.put(op);
  }
  run_end_[seq % backend::Lane::kRing].store(seq, std::memory_order_relaxed);
  inflight_.publish();  // the run at once: one store and one wake-up, not one per op
  uncovered_.clear();
  uncovered_bytes_ = 0;
  if (late_wait_.load(std::memory_order_relaxed)) {
    late_wait_.store(false, std::memory_order_relaxed);
    short_covers_left_ = kShortCovers - 1;  // this cover is the first of them
  } else if (short_covers_left_ > 0) {
    --short_covers_left_;
  }
  publish_launched(seq);
  if (launch_wake_at_.load(std::memory_order_seq_cst) <= seq) {
    std::lock_guard<std::mutex> lock(mutex_);
    launch_wake_at_.store(kNobody, std::memory_order_seq_cst);
    launch_cv_.notify_all();
  }
}

void Stream::completion_worker() {
  TIDE_INTERNAL_ASSERT(lane_ != nullptr, "a completion thread runs only for a GPU stream");
  name_thread(tag_, "-d");
  try {
    lane_->bind_thread();
  } catch (const std::exception&) {
    // Every op of this stream then fails at launch, and its event reports it.
  }
  // One wait per event: the ops it covers are done together, and finish
  // together once the last of them (the op the event was recorded after)
  // is seen.
  std::uint64_t waited = 0;
  backend::Fault fault;
  std::vector<QueuedOp*> run;
  run.reserve(kCoverEvery);
  for (;;) {
    QueuedOp* op = inflight_.pop();
    if (!op) {
      finish_run(run);  // empty: a run ends with its covering op, which came before the sentinel
      return;
    }
    if (op->cover != waited) {
      fault = lane_->wait_done(op->cover, host_wants_, op->seq);
      waited = op->cover;
      if (fault && op->cover != op->seq)
        fault.what += " (at the completion event after ops " + std::to_string(op->seq) + " to " +
                      std::to_string(op->cover) + " of this stream, which it shows done together)";
    }
    bool ran = true;
    if (fault) {
      hooks_.async_failure(*op, index_, fault.what, true);
      ran = false;
    }
    // Its trace event is final before the op counts as completed, so a
    // reader after a barrier finds it.
    if (op->trace_slot >= 0) {
      std::int64_t start = 0, end = 0;
      const bool timed = ran && op->device_timed && lane_->span(op->seq, start, end);
      hooks_.trace_settled(*op, index_, timed, start, end);
    }
    const bool last_of_run = op->seq == op->cover;
    run.push_back(op);
    TIDE_INTERNAL_ASSERT(run.size() <= kCoverEvery, "a run handed to the completion thread is at most kCoverEvery ops");
    if (last_of_run) finish_run(run);
  }
}

}  // namespace tide
