// The asynchronous engine: dependency tracking on the frontend thread,
// one worker per stream, and the sync-policy gate.
#include <algorithm>
#include <deque>

#include "engine_backend.h"
#include "stream.h"

namespace tide {

namespace {

class AsyncEngine final : public EngineBackend, private Stream::Hooks {
 public:
  explicit AsyncEngine(const EngineOptions& options) : EngineBackend(options) {
    std::size_t n = devices_.size() * kStreamKinds;
    streams_.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
      streams_.push_back(std::make_unique<Stream>(static_cast<Stream::Hooks&>(*this), static_cast<int>(i),
                                                  devices_[i / kStreamKinds],
                                                  static_cast<StreamKind>(i % kStreamKinds)));
  }

  ~AsyncEngine() override {
    // Queued work finishes (each stream's sentinel comes after it), then
    // the workers are joined, and only then are streams freed: a worker may
    // wait on another stream until its own last op has run.
    for (auto& s : streams_) s->stop();
    for (auto& s : streams_) s->join();
    streams_.clear();
  }

  EngineKind kind() const override { return EngineKind::async; }

  void cancel_pending() override {
    check_frontend_thread();
    cancelling_.store(true, std::memory_order_release);
    wait_everything();
    cancelling_.store(false, std::memory_order_release);
    drop_errors();
  }

 private:
  // --- push path (frontend thread) ---------------------------------------

  void submit(OpDesc&& desc, int stream_index, std::uint64_t push_index) override {
    Stream& s = *streams_[static_cast<std::size_t>(stream_index)];
    QueuedOp* op = s.acquire_op();
    op->desc = std::move(desc);
    OpDesc& d = op->desc;

    for (int i = 0; i < d.writes.size(); ++i) {
      VarState& v = d.writes[i]->var();
      if (!v.written) op->bytes += d.writes[i]->nbytes();
      v.written = true;  // here already, so a storage listed twice counts once
    }
    if (s.on_host() && policy_.max_streaming_host_bytes && op->bytes && op->bytes <= policy_.streaming_op_bytes)
      op->streaming_bytes = op->bytes;
    gate_queue(*op, s.on_host());
    gate_launches(s);

    op->seq = s.next_seq();
    op->step = current_step();
    op->push_index = push_index;
    // Reads wait for the last writer (RAW); writes wait for the last writer
    // and every reader since (WAW, WAR). Same-stream edges are free: the
    // stream runs in push order.
    for (int i = 0; i < d.reads.size(); ++i) {
      VarState& v = d.reads[i]->var();
      add_wait(*op, s, v.last_write);
      note_reader(v, {&s, op->seq});
    }
    for (int i = 0; i < d.writes.size(); ++i) {
      VarState& v = d.writes[i]->var();
      add_wait(*op, s, v.last_write);
      for (int r = 0; r < v.nreaders; ++r) add_wait(*op, s, v.readers[static_cast<std::size_t>(r)]);
      v.last_write = {&s, op->seq};
      v.nreaders = 0;
      v.written = true;
    }
    pushed_ops_++;
    pushed_bytes_ += op->bytes;
    if (s.on_host()) pushed_host_bytes_ += op->bytes;
    pushed_streaming_bytes_ += op->streaming_bytes;
    if (runs_here(*op, s)) {
      running_kernel_here_ = true;
      s.run_here(op);
      running_kernel_here_ = false;
    } else if (launches_here(*op, s)) {
      running_kernel_here_ = true;
      s.launch_here(op);
      running_kernel_here_ = false;
    } else {
      s.enqueue(op);
    }
    if (++pushes_since_sample_ == kSampleEvery) sample_queue();
  }

  /// Whether `op` runs at once on this thread (SyncPolicy::inline_op_bytes):
  /// a small memory-bound op on an idle CPU stream, with nothing to wait for.
  bool runs_here(const QueuedOp& op, const Stream& s) const {
    const OpDesc& d = op.desc;
    if (!d.memory_bound || !policy_.inline_op_bytes || op.nwaits || !s.on_host()) return false;
    std::uint64_t total = 0;
    for (int i = 0; i < d.reads.size(); ++i) total += d.reads[i]->nbytes();
    for (int i = 0; i < d.writes.size(); ++i) total += d.writes[i]->nbytes();
    return total <= policy_.inline_op_bytes && s.idle_before(op.seq);
  }

  /// Whether `op` is launched at once by this thread (Stream::launch_here):
  /// a memory-bound, launch-only op on a GPU stream that has completed
  /// everything before it, with nothing to wait for, while nothing is
  /// traced (a traced op's span needs the worker's timing events). There is
  /// nothing to run ahead of, and handing it to the worker would put a
  /// thread's wake-up before its launch. inline_op_bytes 0 turns it off; its
  /// size does not matter on a GPU, where the launch costs the same.
  bool launches_here(const QueuedOp& op, const Stream& s) const {
    const OpDesc& d = op.desc;
    return !s.on_host() && d.memory_bound && d.launch_only && policy_.inline_op_bytes && !op.nwaits &&
           !tracing() && s.idle_before(op.seq);
  }

  void add_wait(QueuedOp& op, const Stream& self, StreamPoint p) {
    if (!p.stream || p.stream == &self || p.stream->reached(p.seq)) return;
    for (int i = 0; i < op.nwaits; ++i) {
      if (op.waits[i].stream == p.stream) {
        op.waits[i].seq = std::max(op.waits[i].seq, p.seq);
        return;
      }
    }
    if (op.nwaits == QueuedOp::kMaxWaits) {
      p.stream->wait_until(p.seq);  // more streams than an op can list: rare, wait here
      return;
    }
    op.waits[op.nwaits++] = p;
    counters_->bump(counters_->cross_stream_waits);
  }

  void note_reader(VarState& v, StreamPoint p) {
    for (int r = 0; r < v.nreaders; ++r) {
      auto& slot = v.readers[static_cast<std::size_t>(r)];
      if (slot.stream == p.stream) {
        slot.seq = p.seq;
        return;
      }
    }
    if (v.nreaders == VarState::kMaxReaders) {
      // More reading streams than the state holds: retire the finished ones,
      // waiting for them if need be, so later writers need not track them.
      for (int r = 0; r < v.nreaders; ++r) {
        auto& slot = v.readers[static_cast<std::size_t>(r)];
        slot.stream->wait_until(slot.seq);
      }
      v.nreaders = 0;
    }
    v.readers[static_cast<std::size_t>(v.nreaders++)] = p;
  }

  // --- sync-policy gate (frontend thread) ---------------------------------

  // Queued = pushed - completed. The frontend keeps what the workers had
  // completed when it last looked (a lower bound, so its estimate of queued
  // work is an upper bound) and reads the streams' counters again only when
  // the estimate reaches a cap, or every kSampleEvery pushes for the peak
  // statistics. So a push does not touch the workers' cache lines.
  struct Queued {
    std::uint64_t ops, bytes, host_bytes, streaming_bytes;
  };

  void gate_queue(const QueuedOp& op, bool host) {
    const std::uint64_t bytes = op.bytes;
    auto& c = *counters_;
    const std::uint64_t max_ops = policy_.max_queued_ops;
    if (max_ops && pushed_ops_ - seen_completed_ops_ >= max_ops && sample_queue().ops >= max_ops) {
      auto low = static_cast<std::uint64_t>(static_cast<double>(max_ops) * policy_.low_water);
      if (low >= max_ops) low = max_ops - 1;
      stall(
          c.stalls_ops, [&](const Queued& q) { return q.ops <= low; },
          [&](const Queued& q) { return Need{q.ops - low, kNever}; });
      sample_queue();
    }
    gate_bytes(bytes, policy_.max_queued_bytes, pushed_bytes_ - seen_completed_bytes_, &Queued::bytes);
    if (host)
      gate_bytes(bytes, policy_.max_queued_host_bytes, pushed_host_bytes_ - seen_completed_host_bytes_,
                 &Queued::host_bytes);
    if (op.streaming_bytes)
      gate_bytes(bytes, policy_.max_streaming_host_bytes, pushed_streaming_bytes_ - seen_completed_streaming_bytes_,
                 &Queued::streaming_bytes);
  }

  /// Holds the frontend while the GPU stream it pushes to has
  /// max_unlaunched_gpu_ops ops not yet launched, until the backlog is down
  /// to low_water of it (Stream::wait_launched: the worker's next event
  /// wakes it). A stall of the ops kind.
  void gate_launches(Stream& s) {
    const std::uint64_t cap = policy_.max_unlaunched_gpu_ops;
    if (!cap || s.on_host()) return;
    const std::uint64_t unlaunched = s.pushed() - s.launched();  // before this op
    if (unlaunched < cap) return;
    auto low = static_cast<std::uint64_t>(static_cast<double>(cap) * policy_.low_water);
    if (low >= cap) low = cap - 1;
    const std::int64_t t0 = now_ns();
    counters_->stalling.store(true, std::memory_order_relaxed);
    s.wait_launched(s.pushed() - low);
    counters_->stalling.store(false, std::memory_order_relaxed);
    const std::int64_t t1 = now_ns();
    counters_->add_stall(counters_->stalls_ops, t1 - t0);
    trace_stall(counters_->stalls_ops, t0, t1);
  }

  /// Stalls a push of `bytes` that would take the queued bytes `field`
  /// (estimated at `estimate` from what the frontend saw) over `cap`.
  void gate_bytes(std::uint64_t bytes, std::uint64_t cap, std::uint64_t estimate, std::uint64_t Queued::*field) {
    if (!cap || estimate == 0 || estimate + bytes <= cap) return;
    const std::uint64_t qb = sample_queue().*field;
    if (qb == 0 || qb + bytes <= cap) return;
    auto low = static_cast<std::uint64_t>(static_cast<double>(cap) * policy_.low_water);
    // An op larger than the cap runs alone rather than never.
    stall(
        counters_->stalls_bytes,
        [&](const Queued& q) {
          const std::uint64_t now = q.*field;
          return now == 0 || (now <= low && now + bytes <= cap);
        },
        [&](const Queued& q) {
          // Bytes to complete before the queue is at most `low` and has room
          // for this op, or is empty (an op larger than the cap). The
          // workers count every completed byte, at least this field's: at
          // worst they wake the frontend early.
          const std::uint64_t now = q.*field;
          const std::uint64_t over_low = now > low ? now - low : 0;
          const std::uint64_t over_cap = now + bytes > cap ? now + bytes - cap : 0;
          return Need{kNever, std::min(now, std::max(over_low, over_cap))};
        });
    sample_queue();
  }

  /// Exact queued work, from every stream's counters (any thread).
  Queued queued() const {
    std::uint64_t pushed = 0, done = 0, pushed_b = 0, done_b = 0, pushed_h = 0, done_h = 0, pushed_s = 0, done_s = 0;
    for (const auto& s : streams_) {
      done += s->completed();  // completed first: pushed read later is >= it
      done_b += s->completed_bytes();
      if (s->on_host()) done_h += s->completed_bytes();
      done_s += s->completed_streaming_bytes();
    }
    for (const auto& s : streams_) {
      pushed += s->pushed();
      pushed_b += s->pushed_bytes();
      if (s->on_host()) pushed_h += s->pushed_bytes();
      pushed_s += s->pushed_streaming_bytes();
    }
    return {pushed - done, pushed_b - done_b, pushed_h - done_h, pushed_s - done_s};
  }

  /// Frontend: refreshes the completed counts it knows and the peaks.
  Queued sample_queue() {
    pushes_since_sample_ = 0;
    std::uint64_t done = 0, done_b = 0, done_h = 0, done_s = 0;
    for (auto& s : streams_) {
      done += s->completed();
      const std::uint64_t b = s->completed_bytes();
      done_b += b;
      if (s->on_host()) done_h += b;
      done_s += s->completed_streaming_bytes();
      s->reclaim();
    }
    seen_completed_ops_ = done;
    seen_completed_bytes_ = done_b;
    seen_completed_host_bytes_ = done_h;
    seen_completed_streaming_bytes_ = done_s;
    Queued q{pushed_ops_ - done, pushed_bytes_ - done_b, pushed_host_bytes_ - done_h,
             pushed_streaming_bytes_ - done_s};
    auto& c = *counters_;
    c.note_peak(c.peak_queued_ops, q.ops);
    c.note_peak(c.peak_queued_bytes, q.bytes);
    return q;
  }

  /// What must complete, from a snapshot of the queue, before a stalled
  /// push may go on: ops or bytes (kNever: not counted).
  static constexpr std::uint64_t kNever = ~std::uint64_t{0};
  struct Need {
    std::uint64_t ops, bytes;
  };

  /// Blocks the frontend until `ready(queued())`. The workers wake it only
  /// once `need(snapshot)` ops or bytes have completed since the snapshot,
  /// not at every completion (each wake-up is a futex call on the worker and
  /// a context switch on the frontend's core). Both sides are seq_cst: a
  /// worker either sees the published need, or its completion is seen by
  /// the check of `ready` that follows the publication.
  template <typename Ready, typename Deficit>
  void stall(std::atomic<std::uint64_t>& kind, Ready ready, Deficit need) {
    std::int64_t t0 = now_ns();
    counters_->stalling.store(true, std::memory_order_relaxed);
    gate_waiters_.fetch_add(1, std::memory_order_seq_cst);
    {
      std::unique_lock<std::mutex> lock(gate_mutex_);
      for (;;) {
        gate_done_ops_.store(0, std::memory_order_seq_cst);
        gate_done_bytes_.store(0, std::memory_order_seq_cst);
        const Queued q = queued();
        if (ready(q)) break;
        const Need n = need(q);
        gate_need_ops_.store(n.ops, std::memory_order_seq_cst);
        gate_need_bytes_.store(n.bytes, std::memory_order_seq_cst);
        if (ready(queued())) break;
        gate_cv_.wait(lock);
      }
      gate_need_ops_.store(kNever, std::memory_order_relaxed);
      gate_need_bytes_.store(kNever, std::memory_order_relaxed);
    }
    gate_waiters_.fetch_sub(1, std::memory_order_relaxed);
    counters_->stalling.store(false, std::memory_order_relaxed);
    const std::int64_t t1 = now_ns();
    counters_->add_stall(kind, t1 - t0);
    trace_stall(kind, t0, t1);
  }

  /// A stall of the sync policy on the frontend's timeline.
  void trace_stall(const std::atomic<std::uint64_t>& kind, std::int64_t t0, std::int64_t t1) {
    if (!tracing()) return;
    const auto& c = *counters_;
    const char* what = &kind == &c.stalls_steps ? "stall (steps)" : &kind == &c.stalls_ops ? "stall (ops)" : "stall (bytes)";
    trace_frontend({FrontendEvent::Kind::stall, what, "", 0, current_step(), t0, t1});
  }

  void begin_step(std::uint32_t k) override {
    // Steps in flight = ended steps not yet complete + the one about to begin;
    // measured with or without a cap k (0: none).
    retire_finished_steps();
    if (k && step_ends_.size() + 1 > k) {
      std::int64_t t0 = now_ns();
      counters_->stalling.store(true, std::memory_order_relaxed);
      while (step_ends_.size() + 1 > k) {
        // Pacing only: these waits read no value, so they do not shorten
        // a GPU stream's runs of ops (Stream::note_wait).
        for (const auto& p : step_ends_.front()) p.stream->wait_completed(p.seq, false);
        step_ends_.pop_front();
      }
      counters_->stalling.store(false, std::memory_order_relaxed);
      const std::int64_t t1 = now_ns();
      counters_->add_stall(counters_->stalls_steps, t1 - t0);
      trace_stall(counters_->stalls_steps, t0, t1);
    }
    auto& c = *counters_;
    c.note_peak(c.peak_inflight_steps, step_ends_.size() + 1);
  }

  void mark_step_end() override {
    std::vector<StreamPoint> ends;
    for (auto& s : streams_)
      if (!s->reached(s->pushed())) ends.push_back({s.get(), s->pushed()});
    sample_queue();
    step_ends_.push_back(std::move(ends));
  }

  void retire_finished_steps() {
    while (!step_ends_.empty()) {
      for (const auto& p : step_ends_.front())
        if (!p.stream->reached(p.seq)) return;
      step_ends_.pop_front();
    }
  }

  // --- barriers ---------------------------------------------------------

  void wait_storage(const Storage& st) override {
    const StreamPoint& w = st.var().last_write;
    if (w.stream) {
      w.stream->wait_until(w.seq);
      w.stream->reclaim();
    }
  }

  void wait_everything() override {
    for (auto& s : streams_) s->wait_until(s->pushed());
    sample_queue();
  }

  void backend_stats(Stats& out) const override {
    Queued q = queued();
    std::uint64_t done = 0;
    for (const auto& s : streams_) done += s->completed();
    out.ops_completed = done;
    out.queued_ops = q.ops;
    out.queued_bytes = q.bytes;
  }

  // --- worker side ------------------------------------------------------

  void run(QueuedOp& op, int stream_index, void* native_stream, const char* skip_reason) override {
    run_op(op, stream_index, native_stream, skip_reason);
  }

  bool tracing() const override { return tracing_.load(std::memory_order_relaxed); }

  void trace_settled(QueuedOp& op, int stream_index, bool timed, std::int64_t start_ns, std::int64_t end_ns) override {
    settle_trace(stream_index, op.trace_slot, timed, start_ns, end_ns);
  }

  void async_failure(QueuedOp& op, int stream_index, const std::string& what, bool at_completion) override {
    record_device_failure(op.desc, stream_index, op.seq, op.step, op.push_index, what, at_completion);
  }

  void completed(std::uint64_t n, std::uint64_t bytes) override {
    if (gate_waiters_.load(std::memory_order_seq_cst) == 0) return;
    const std::uint64_t ops = gate_done_ops_.fetch_add(n, std::memory_order_seq_cst) + n;
    const std::uint64_t done_bytes = gate_done_bytes_.fetch_add(bytes, std::memory_order_seq_cst) + bytes;
    if (ops >= gate_need_ops_.load(std::memory_order_seq_cst) ||
        done_bytes >= gate_need_bytes_.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> lock(gate_mutex_);
      gate_cv_.notify_all();
    }
  }

  std::vector<std::unique_ptr<Stream>> streams_;
  std::deque<std::vector<StreamPoint>> step_ends_;  // per ended step: each stream's last op
  // Frontend only.
  static constexpr int kSampleEvery = 32;
  std::uint64_t pushed_ops_ = 0, pushed_bytes_ = 0, pushed_host_bytes_ = 0, pushed_streaming_bytes_ = 0;
  std::uint64_t seen_completed_ops_ = 0, seen_completed_bytes_ = 0, seen_completed_host_bytes_ = 0,
                seen_completed_streaming_bytes_ = 0;
  int pushes_since_sample_ = 0;
  // Read by every worker after each op, written only around a stall.
  alignas(64) std::atomic<int> gate_waiters_{0};
  // Around a stall: what the frontend waits for, and what completed since
  // it looked (written by the workers only while it waits).
  std::atomic<std::uint64_t> gate_need_ops_{kNever}, gate_need_bytes_{kNever};
  std::atomic<std::uint64_t> gate_done_ops_{0}, gate_done_bytes_{0};
  std::mutex gate_mutex_;
  std::condition_variable gate_cv_;
};

}  // namespace

std::unique_ptr<Engine> make_async_engine(const EngineOptions& options) {
  return std::make_unique<AsyncEngine>(options);
}

}  // namespace tide
