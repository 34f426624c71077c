// The engine's front half, shared by the async and naive backends: checks,
// stream choice, steps, errors, blockers and stats.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "engine_internal.h"
#include "mirror_sync.h"

#include "backend.h"
#include "stream.h"

namespace tide {

namespace {
std::atomic<std::uint64_t> g_next_engine_id{1};
std::atomic<Engine*> g_current{nullptr};

int env_int(const char* name, int def, int lo, int hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < lo || x > hi)
    throw ValueError(std::string(name) + "=" + v + " is not an integer in [" + std::to_string(lo) +
                     ", " + std::to_string(hi) + "]");
  return static_cast<int>(x);
}

// An engine destroyed with backend errors nobody was shown: the work the
// process did failed, so it must not end with status 0. A library cannot
// exit from wherever the engine happens to be destroyed (inside main, a test
// that goes on); an exit handler, registered once, sets the status when the
// process ends. It runs first among the exit handlers (it is the last
// registered), so it flushes stdio itself before _Exit.
constexpr int kUnreportedErrorExitStatus = 1;
std::atomic<bool> g_exit_failed{false};

void exit_with_failure() {
  std::fflush(nullptr);
  std::_Exit(kUnreportedErrorExitStatus);
}
}  // namespace

const char* engine_kind_name(EngineKind k) { return k == EngineKind::async ? "async" : "naive"; }

EngineOptions EngineOptions::from_env() {
  EngineOptions o;
  if (const char* v = std::getenv("TIDE_ENGINE"); v && *v) {
    std::string s = v;
    if (s == "async") o.kind = EngineKind::async;
    else if (s == "naive") o.kind = EngineKind::naive;
    else throw ValueError("TIDE_ENGINE=" + s + ": expected 'async' or 'naive'");
  }
  o.cpu_devices = env_int("TIDE_CPU_DEVICES", 1, 1, kMaxCpuDevices);
  o.cuda_devices = env_int("TIDE_CUDA_DEVICES", -1, 0, 64);
  return o;
}

void StorageList::add(std::shared_ptr<Storage> s) {
  if (n_ == kCapacity)
    throw UsageError("an op may list at most " + std::to_string(kCapacity) + " storages per set");
  if (n_ < kInline) {
    items_[static_cast<std::size_t>(n_)] = std::move(s);
  } else {
    if (!more_) more_ = std::make_unique<std::vector<std::shared_ptr<Storage>>>();
    more_->push_back(std::move(s));
  }
  ++n_;
}

void StorageList::clear() {
  for (int i = 0; i < n_ && i < kInline; ++i) items_[static_cast<std::size_t>(i)].reset();
  if (more_) more_->clear();
  n_ = 0;
}

std::unique_ptr<Engine> Engine::create(const EngineOptions& options) {
  if (options.cpu_devices < 1 || options.cpu_devices > kMaxCpuDevices)
    throw ValueError("cpu_devices must be in [1, " + std::to_string(kMaxCpuDevices) + "], got " +
                     std::to_string(options.cpu_devices));
  if (options.cuda_devices < -1)
    throw ValueError("cuda_devices must be -1 (all) or a count, got " + std::to_string(options.cuda_devices));
  if (options.cuda_devices > cuda_device_count())
    throw DeviceError("asked for " + std::to_string(options.cuda_devices) + " CUDA device(s), but this process has " +
                      std::to_string(cuda_device_count()) +
                      (cuda_built() ? "" : " (tide was built without the CUDA backend)"));
  options.policy.validate();
  return options.kind == EngineKind::async ? make_async_engine(options) : make_naive_engine(options);
}

Engine::Engine(const EngineOptions& options)
    : policy_(options.policy), counters_(std::make_unique<Counters>()), id_(g_next_engine_id++) {
  for (int i = 0; i < options.cpu_devices; ++i) devices_.push_back(cpu(i));
  cpu_devices_ = options.cpu_devices;
  const int gpus = options.cuda_devices < 0 ? cuda_device_count() : options.cuda_devices;
  for (int i = 0; i < gpus; ++i) devices_.push_back(cuda(i));
  const std::size_t nstreams = devices_.size() * kStreamKinds;
  for (std::size_t i = 0; i < nstreams; ++i)
    counters_->streams.push_back(std::make_unique<StreamCounters>(options.kind == EngineKind::async &&
                                                                  devices_[i / kStreamKinds].is_cuda()));
  counters_->device_failures.resize(devices_.size());
}

Engine::~Engine() {
  Engine* self = this;
  g_current.compare_exchange_strong(self, nullptr);
  const std::size_t unreported = counters_->errors.size();
  const std::shared_ptr<const OpProvenance> first = counters_->errors.first_recorded();
  if (first) {
    std::fprintf(stderr,
                 "tide: engine destroyed with %zu unreported backend error(s); first: %s\n"
                 "tide: the process will exit with status %d\n",
                 unreported, BackendError(first).what(), kUnreportedErrorExitStatus);
    if (!g_exit_failed.exchange(true)) std::atexit(exit_with_failure);
  }
}

void Engine::check_device(Device d) const {
  for (const auto& x : devices_)
    if (x == d) return;
  std::string have;
  for (const auto& x : devices_) have += (have.empty() ? "" : ", ") + x.str();
  throw DeviceError("device " + d.str() + " is not available (this engine has: " + have + ")");
}

std::shared_ptr<Storage> Engine::allocate(Device device, std::size_t nbytes) {
  check_device(device);
  return std::make_shared<Storage>(id_, device, nbytes);
}

void Engine::check_frontend_thread() {
  const std::thread::id me = std::this_thread::get_id();
  std::thread::id owner = frontend_thread_.load(std::memory_order_relaxed);
  // The first use claims the engine; of two threads starting at once, one
  // wins and the other sees it as the owner.
  if (owner == std::thread::id{} && frontend_thread_.compare_exchange_strong(owner, me)) return;
  if (owner == me && running_kernel_here_)
    throw UsageError("a kernel used the tide engine: ops may not push, wait or step from inside a kernel");
  if (owner != me)
    throw UsageError("tide engine used from a second thread: push, barriers and steps must all "
                     "come from its one frontend thread");
}

void Engine::push(OpDesc&& op) {
  check_frontend_thread();
  check_device(op.device);
  if (!op.fn) throw UsageError(std::string("op '") + op.name + "' has no kernel");
  for (int i = 0; i < op.reads.size(); ++i)
    if (op.reads[i]->engine_id() != id_)
      throw UsageError(std::string("op '") + op.name + "' reads a tensor of another engine");
  for (int i = 0; i < op.writes.size(); ++i)
    if (op.writes[i]->engine_id() != id_)
      throw UsageError(std::string("op '") + op.name + "' writes a tensor of another engine");
  int kind = op.stream >= 0 ? op.stream : static_cast<int>(stream_kind_);
  if (kind >= kStreamKinds) throw UsageError("bad stream kind " + std::to_string(kind));
  int stream_index = device_slot(op.device) * kStreamKinds + kind;
  const std::uint64_t push_index = push_count_++;
  bool mirrored = false;
  for (int i = 0; i < op.writes.size(); ++i) {
    VarState& v = op.writes[i]->var();
    ++v.version;
    mirrored |= v.mirrored();
  }
  if (mirrored && !syncing_mirrors_) [[unlikely]] {
    submit_and_sync_mirrors(std::move(op), stream_index, push_index);
    return;
  }
  submit(std::move(op), stream_index, push_index);
  counters_->pushed.store(push_count_, std::memory_order_relaxed);
}

void Engine::submit_and_sync_mirrors(OpDesc&& op, int stream_index, std::uint64_t push_index) {
  // The blocks written, each once, held: the op may run and drop them
  // before the copies are pushed.
  std::vector<std::shared_ptr<Storage>> written;
  bool part_of_a_mirror = false;  // some write covers only part of a mirror's storage
  for (int i = 0; i < op.writes.size(); ++i) {
    auto owner = Storage::owner_of(op.writes.shared(i));
    part_of_a_mirror |= owner->var().mirror && !op.writes[i]->covers_owner();
    if (std::find(written.begin(), written.end(), owner) == written.end()) written.push_back(std::move(owner));
  }
  const bool one_tree = written.size() > 1 && share_a_mirror_tree(written);
  if (one_tree && part_of_a_mirror) {
    // Each mirror is written back whole, so the part this op did not write
    // would land over what it wrote through the other view. Refused with
    // nothing queued: the version counts and the push index go back.
    for (int i = 0; i < op.writes.size(); ++i) --op.writes[i]->var().version;
    --push_count_;
    throw UsageError(std::string("op '") + op.name +
                     "' writes part of a mirror (a view of a column, a step or a transpose) and another view of "
                     "the same tensor; a mirror is written back whole, so one of the writes would be lost. Write "
                     "them in separate ops");
  }
  submit(std::move(op), stream_index, push_index);
  counters_->pushed.store(push_count_, std::memory_order_relaxed);
  // The copies are ordinary pushes, on the stream kind of the op that wrote,
  // which must not start copies of their own: sync_after_write walks every
  // mirror the write reaches, once.
  struct Restore {
    Engine& e;
    StreamKind kind;
    ~Restore() {
      e.syncing_mirrors_ = false;
      e.stream_kind_ = kind;
    }
  } restore{*this, stream_kind_};
  syncing_mirrors_ = true;
  stream_kind_ = static_cast<StreamKind>(stream_index % kStreamKinds);
  sync_after_write(*this, written, one_tree);
}

std::string Engine::stream_name(int stream_index) const {
  return devices_[static_cast<std::size_t>(stream_index / kStreamKinds)].str() + "/" +
         stream_kind_name(static_cast<StreamKind>(stream_index % kStreamKinds));
}

void Engine::rethrow_device_failure(Device d) {
  if (!device_failed_.load(std::memory_order_acquire)) return;
  std::shared_ptr<const OpProvenance> p;
  {
    std::lock_guard<std::mutex> lock(counters_->mutex);
    auto& failures = counters_->device_failures;
    p = failures[static_cast<std::size_t>(device_slot(d))];
    // A faulted GPU's results may have reached this device (a peer copy, a
    // host op after a completed event) without any poison to mark them.
    for (std::size_t i = 0; !p && i < failures.size(); ++i) p = failures[i];
    if (p) counters_->errors.forget(p);
  }
  if (p) throw BackendError(p);
}

void Engine::rethrow_poison(const Storage& s) {
  const auto& p = s.poison();
  if (!p) return;
  {
    std::lock_guard<std::mutex> lock(counters_->mutex);
    counters_->errors.forget(p);
  }
  throw BackendError(p);
}

void Engine::rethrow_first_unreported() {
  std::shared_ptr<const OpProvenance> first;
  {
    std::lock_guard<std::mutex> lock(counters_->mutex);
    first = counters_->errors.take_first();
  }
  if (first) throw BackendError(first);
}

void Engine::drop_errors() {
  std::lock_guard<std::mutex> lock(counters_->mutex);
  counters_->errors.drop();
}

void Engine::record_blocker(const char* kind, Loc loc, std::int64_t ns) {
  std::lock_guard<std::mutex> lock(counters_->mutex);
  auto& site = counters_->sites[{loc.file_name(), loc.line(), loc.column(), kind}];
  site.kind = kind;
  site.loc = loc;
  site.count++;
  site.ns += ns;
  counters_->blockers++;
  counters_->blocked_ns += ns;
  if (tracing()) {
    const std::int64_t end = now_ns();
    if (counters_->frontend_trace.size() < StreamCounters::kMaxTrace)
      counters_->frontend_trace.push_back(
          {FrontendEvent::Kind::blocker, kind, loc.file_name(), loc.line(), step_index_, end - ns, end});
  }
}

void Engine::trace_frontend(FrontendEvent e) {
  if (!tracing()) return;
  std::lock_guard<std::mutex> lock(counters_->mutex);
  if (counters_->frontend_trace.size() < StreamCounters::kMaxTrace) counters_->frontend_trace.push_back(e);
}

std::vector<FrontendEvent> Engine::take_frontend_trace() {
  std::lock_guard<std::mutex> lock(counters_->mutex);
  std::vector<FrontendEvent> out;
  out.swap(counters_->frontend_trace);
  return out;
}

void Engine::wait_for(const Storage& s, const char* kind, Loc loc) {
  check_frontend_thread();
  if (s.engine_id() != id_) throw UsageError("wait_to_read on a tensor of another engine");
  std::int64_t t0 = now_ns();
  wait_storage(s);
  record_blocker(kind, loc, now_ns() - t0);
  rethrow_device_failure(s.device());
  rethrow_poison(s);
}

void Engine::wait_all(Loc loc) {
  check_frontend_thread();
  std::int64_t t0 = now_ns();
  wait_everything();
  record_blocker("wait_all", loc, now_ns() - t0);
  rethrow_first_unreported();
}

Step Engine::step(Loc loc) {
  check_frontend_thread();
  if (in_step_)
    throw UsageError("step() at " + format_call_site(loc) + " while another step is open: steps do not nest");
  begin_step(policy_.max_inflight_steps);
  in_step_ = true;
  if (tracing()) {
    const std::int64_t t = now_ns();
    trace_frontend({FrontendEvent::Kind::step, "step", loc.file_name(), loc.line(), step_index_, t, t});
  }
  counters_->bump(counters_->steps_begun);
  return Step(this, step_index_);
}

void Engine::begin_step(std::uint32_t) { Counters::note_peak(counters_->peak_inflight_steps, 1); }

void Engine::end_step(std::uint64_t index) noexcept {
  if (!in_step_ || index != step_index_) return;
  mark_step_end();
  in_step_ = false;
  ++step_index_;
}

Step::~Step() {
  if (engine_) engine_->end_step(index_);
}

void Engine::set_policy(const SyncPolicy& p) {
  check_frontend_thread();
  p.validate();
  policy_ = p;
}

Stats Engine::stats() const {
  const Counters& c = *counters_;
  auto ld = [](const auto& a) { return a.load(std::memory_order_relaxed); };
  Stats s;
  s.ops_pushed = ld(c.pushed);
  s.ops_failed = ld(c.failed);
  s.ops_skipped = ld(c.skipped);
  s.cross_stream_waits = ld(c.cross_stream_waits);
  s.stalls = ld(c.stalls);
  s.stalled_ns = ld(c.stalled_ns);
  s.stalls_steps = ld(c.stalls_steps);
  s.stalls_ops = ld(c.stalls_ops);
  s.stalls_bytes = ld(c.stalls_bytes);
  s.stalling = ld(c.stalling);
  backend_stats(s);
  // Peaks are sampled; the present is exact, and a peak is never below it
  // nor below an earlier answer: the present goes into the stored peaks.
  Counters::note_peak(counters_->peak_queued_ops, s.queued_ops);
  Counters::note_peak(counters_->peak_queued_bytes, s.queued_bytes);
  s.peak_queued_ops = ld(c.peak_queued_ops);
  s.peak_queued_bytes = ld(c.peak_queued_bytes);
  for (std::size_t i = 0; i < c.streams.size(); ++i) {
    const StreamCounters& sc = *c.streams[i];
    const std::uint64_t n = ld(sc.ops);
    if (!n) continue;
    const std::int64_t busy = ld(sc.busy_ns);
    s.streams.push_back({stream_name(static_cast<int>(i)), n, busy});
    s.backend_busy_ns += busy;
  }
  s.steps_begun = ld(c.steps_begun);
  s.peak_inflight_steps = ld(c.peak_inflight_steps);
  std::lock_guard<std::mutex> lock(counters_->mutex);
  s.blockers = c.blockers;
  s.blocked_ns = c.blocked_ns;
  for (const auto& [key, site] : c.sites)
    s.blocker_sites.push_back({site.kind, format_call_site(site.loc), site.count, site.ns});
  return s;
}

void Engine::reset_stats() {
  check_frontend_thread();
  Counters& c = *counters_;
  for (auto* a : {&c.failed, &c.skipped, &c.cross_stream_waits, &c.stalls,
                  &c.stalls_steps, &c.stalls_ops, &c.stalls_bytes, &c.steps_begun,
                  &c.peak_inflight_steps})
    a->store(0, std::memory_order_relaxed);
  c.stalled_ns.store(0, std::memory_order_relaxed);
  // Workers own these counters; a reset races only with ops still running,
  // which the caller should have waited for.
  for (auto& sc : c.streams) {
    sc->ops.store(0, std::memory_order_relaxed);
    sc->busy_ns.store(0, std::memory_order_relaxed);
  }
  Stats now;
  backend_stats(now);
  c.peak_queued_ops.store(now.queued_ops, std::memory_order_relaxed);
  c.peak_queued_bytes.store(now.queued_bytes, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(c.mutex);
  c.sites.clear();
  c.blockers = 0;
  c.blocked_ns = 0;
}

void Engine::set_tracing(bool on) {
  check_frontend_thread();
  tracing_.store(on, std::memory_order_relaxed);
}

std::vector<TraceEvent> Engine::take_trace() {
  check_frontend_thread();
  std::vector<TraceEvent> all;
  for (auto& sc : counters_->streams) sc->trace.take(all);
  std::sort(all.begin(), all.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.start_ns < b.start_ns; });
  return all;
}

std::vector<TraceEvent> Engine::read_trace(TraceCursor& cursor) {
  check_frontend_thread();
  std::vector<TraceEvent> out;
  cursor.resize(counters_->streams.size(), 0);
  for (std::size_t i = 0; i < counters_->streams.size(); ++i) {
    std::uint64_t at = cursor[i];
    counters_->streams[i]->trace.read(at, out);
    cursor[i] = static_cast<std::size_t>(at);
  }
  std::sort(out.begin(), out.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.start_ns < b.start_ns; });
  return out;
}

int Engine::stream_count() const noexcept { return static_cast<int>(counters_->streams.size()); }

Engine::StreamActivity Engine::activity(int stream_index) const noexcept {
  StreamActivity a;
  if (stream_index < 0 || stream_index >= stream_count()) return a;
  const StreamCounters& sc = *counters_->streams[static_cast<std::size_t>(stream_index)];
  a.running = sc.running.load(std::memory_order_relaxed);
  a.since_ns = sc.running_since.load(std::memory_order_relaxed);
  a.last = sc.last.load(std::memory_order_relaxed);
  a.last_end_ns = sc.last_end.load(std::memory_order_relaxed);
  a.ops = sc.ops.load(std::memory_order_relaxed);
  return a;
}

std::uint64_t Engine::trace_dropped() const {
  std::uint64_t n = 0;
  for (const auto& sc : counters_->streams) n += sc->trace.dropped();
  return n;
}

std::string Stats::str() const {
  std::ostringstream os;
  os << "ops: " << ops_pushed << " pushed, " << ops_completed << " completed, " << ops_failed
     << " failed, " << ops_skipped << " skipped; cross-stream waits " << cross_stream_waits << "\n"
     << "blockers: " << blockers << " (" << blocked_ns / 1000 << " us); stalls: " << stalls << " ("
     << stalled_ns / 1000 << " us: steps " << stalls_steps << ", ops " << stalls_ops << ", bytes "
     << stalls_bytes << ")\n"
     << "peak queued: " << peak_queued_ops << " ops, " << peak_queued_bytes << " bytes; steps "
     << steps_begun << " (peak in flight " << peak_inflight_steps << ")\n";
  for (const auto& st : streams)
    os << "  stream " << st.name << ": " << st.ops << " ops, busy " << st.busy_ns / 1000 << " us\n";
  for (const auto& b : blocker_sites)
    os << "  " << b.kind << " x" << b.count << " (" << b.blocked_ns / 1000 << " us) at "
       << b.call_site << "\n";
  return os.str();
}

namespace {
std::atomic<EngineFallback> g_fallback{nullptr};
thread_local bool t_in_fallback = false;
}  // namespace

void set_engine_fallback(EngineFallback f) { g_fallback.store(f, std::memory_order_release); }

Engine& current_engine() {
  Engine* e = g_current.load(std::memory_order_acquire);
  if (!e && !t_in_fallback) {
    if (EngineFallback f = g_fallback.load(std::memory_order_acquire)) {
      t_in_fallback = true;
      try {
        e = f();
      } catch (...) {
        t_in_fallback = false;
        throw;
      }
      t_in_fallback = false;
    }
  }
  if (!e)
    throw UsageError("no active tide engine: create a tide::Runtime (or an Engine and an "
                     "EngineScope) before calling ops");
  return *e;
}

Engine* current_engine_or_null() { return g_current.load(std::memory_order_acquire); }

EngineScope::EngineScope(Engine& e) : prev_(g_current.exchange(&e)) {}
EngineScope::~EngineScope() { g_current.store(prev_); }

StreamScope::StreamScope(StreamKind k, Engine& e) : engine_(e), prev_(e.stream_kind()) {
  e.set_stream_kind(k);
}
StreamScope::~StreamScope() { engine_.set_stream_kind(prev_); }

}  // namespace tide
