#include "flight_recorder.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include <tide/comm/communicator.h>
#include <tide/comm/types.h>
#include <tide/core/engine.h>

namespace tide::detail {

namespace {

enum FlightState : std::uint64_t { kPushed = 1, kRunning = 2, kDone = 3, kFailed = 4 };
const char* state_name(std::uint64_t s) {
  switch (s) {
    case kPushed: return "pushed";
    case kRunning: return "running";
    case kDone: return "done";
    case kFailed: return "failed";
    default: return "?";
  }
}

// One collective. `record` says which one the slot holds now: written last
// on push (release), checked by the comm thread before it writes the times.
struct Record {
  std::atomic<std::uint64_t> record{0}, ident{0}, seq{0}, state{0};
  std::atomic<std::uint64_t> w[3] = {0, 0, 0};  // CollectiveSig
  std::atomic<std::int64_t> pushed_ns{0}, started_ns{0}, ended_ns{0};
};
Record g_ring[kFlightRecords];
std::atomic<std::uint64_t> g_next{1};  // the next record's number

constexpr int kMaxStreams = 64;
constexpr std::size_t kNameBytes = 40;
std::atomic<const Engine*> g_engine{nullptr};
char g_stream_names[kMaxStreams][kNameBytes];
std::atomic<int> g_streams{0};
char g_path[4096];  // empty: nowhere to write
int g_rank = 0;
std::atomic<bool> g_dumped{false};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// A collective's stamps: the monotonic clock at its last tick (a few ms
/// behind steady_clock at most, on the same scale). Every collective takes
/// three, and a record says how long something has waited, in seconds: the
/// tick's clock costs 3 ns a read where steady_clock's costs 21 (a 2-core
/// VM), a tenth of a small all-reduce.
std::int64_t stamp_ns() {
#ifdef CLOCK_MONOTONIC_COARSE
  timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0)
    return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
#endif
  return now_ns();
}

/// A JSON text built without allocating (a signal handler writes it).
struct Out {
  static constexpr std::size_t kBytes = 96 * 1024;
  char buf[kBytes];
  std::size_t n = 0;
  void put(const char* s) {
    while (s && *s && n < kBytes - 1) buf[n++] = *s++;
  }
  /// A JSON string of at most `max` bytes of `s` ("..." marking a cut, so
  /// that a long failure message cannot crowd out the record): quotes, and
  /// anything not plain printable ASCII as '?'.
  void str(const char* s, std::size_t max = kBytes) {
    put("\"");
    std::size_t k = 0;
    for (; s && *s && k < max && n < kBytes - 2; ++s, ++k) {
      const auto c = static_cast<unsigned char>(*s);
      buf[n++] = (c == '"' || c == '\\' || c < 0x20 || c > 0x7e) ? '?' : *s;
    }
    if (s && *s && k == max) put("...");
    put("\"");
  }
  /// ,"k":v for an integer v.
  template <typename T>
  void field(const char* k, T v) {
    put(",");
    key(k);
    if constexpr (std::is_signed_v<T>) num(static_cast<std::int64_t>(v));
    else num(static_cast<std::uint64_t>(v));
  }
  /// ,"k":"s" (at most `max` bytes of s, as str).
  void text(const char* k, const char* s, std::size_t max = kBytes) {
    put(",");
    key(k);
    str(s, max);
  }
  void num(std::uint64_t v) {
    char d[24];
    int k = 0;
    do d[k++] = static_cast<char>('0' + v % 10); while ((v /= 10) && k < 24);
    while (k > 0 && n < kBytes - 1) buf[n++] = d[--k];
  }
  void num(std::int64_t v) {
    if (v < 0) {
      put("-");
      num(static_cast<std::uint64_t>(-(v + 1)) + 1);
    } else {
      num(static_cast<std::uint64_t>(v));
    }
  }
  void key(const char* k) {
    str(k);
    put(":");
  }
};
Out g_out;  // static: too large for a signal handler's stack

void put_record(Out& o, const Record& r, std::uint64_t rec) {
  CollectiveSig sig;
  for (int i = 0; i < 3; ++i) sig.w[i] = r.w[i].load(std::memory_order_relaxed);
  const CollectiveId id = CollectiveId::from_sig(sig, r.seq.load(std::memory_order_relaxed));
  o.put("{");
  o.key("record");
  o.num(rec);
  o.field("communicator", r.ident.load(std::memory_order_relaxed));
  o.field("seq", id.seq);
  o.text("kind", collective_kind_name(id.kind));
  if (id.count >= 0) {
    o.field("count", id.count);
    o.text("dtype", dtype_name(id.dtype));
    o.field("bytes", static_cast<std::uint64_t>(id.count) * dtype_size(id.dtype) *
                         static_cast<std::uint64_t>(id.devices > 1 ? id.devices : 1));
  }
  if (id.op) o.text("op", reduce_op_name(*id.op));
  if (id.root >= 0) o.field("root", id.root);
  o.text("state", state_name(r.state.load(std::memory_order_relaxed)));
  const char* names[3] = {"pushed_ns", "started_ns", "ended_ns"};
  const std::int64_t times[3] = {r.pushed_ns.load(std::memory_order_relaxed),
                                 r.started_ns.load(std::memory_order_relaxed),
                                 r.ended_ns.load(std::memory_order_relaxed)};
  for (int i = 0; i < 3; ++i)
    if (times[i]) o.field(names[i], times[i]);
  o.put("}");
}

}  // namespace

std::uint64_t flight_pushed(std::uint64_t ident, const CollectiveId& id) {
  const std::uint64_t rec = g_next.fetch_add(1, std::memory_order_relaxed);
  Record& r = g_ring[rec % kFlightRecords];
  r.record.store(0, std::memory_order_relaxed);  // being rewritten
  const CollectiveSig sig = id.sig();
  for (int i = 0; i < 3; ++i) r.w[i].store(sig.w[i], std::memory_order_relaxed);
  r.ident.store(ident, std::memory_order_relaxed);
  r.seq.store(id.seq, std::memory_order_relaxed);
  r.state.store(kPushed, std::memory_order_relaxed);
  r.pushed_ns.store(stamp_ns(), std::memory_order_relaxed);
  r.started_ns.store(0, std::memory_order_relaxed);
  r.ended_ns.store(0, std::memory_order_relaxed);
  r.record.store(rec, std::memory_order_release);
  return rec;
}

void flight_started(std::uint64_t rec) {
  Record& r = g_ring[rec % kFlightRecords];
  if (rec == 0 || r.record.load(std::memory_order_acquire) != rec) return;
  r.started_ns.store(stamp_ns(), std::memory_order_relaxed);
  r.state.store(kRunning, std::memory_order_relaxed);
}

void flight_ended(std::uint64_t rec, bool failed) {
  Record& r = g_ring[rec % kFlightRecords];
  if (rec == 0 || r.record.load(std::memory_order_acquire) != rec) return;
  r.ended_ns.store(stamp_ns(), std::memory_order_relaxed);
  r.state.store(failed ? kFailed : kDone, std::memory_order_relaxed);
}

void flight_init(int world_rank, const Engine* engine, const char* trace_dir) {
  if (!engine) {
    g_engine.store(nullptr, std::memory_order_release);
    return;
  }
  g_rank = world_rank;
  const int n = std::min(engine->stream_count(), kMaxStreams);
  for (int i = 0; i < n; ++i) {
    const std::string name = engine->stream_name(i);
    std::snprintf(g_stream_names[i], kNameBytes, "%s", name.c_str());
  }
  g_streams.store(n, std::memory_order_relaxed);
  g_engine.store(engine, std::memory_order_release);
  const char* dir = std::getenv("TIDE_FLIGHT_DIR");
  if (!dir || !*dir) dir = trace_dir;
  g_path[0] = '\0';
  if (dir && *dir) std::snprintf(g_path, sizeof g_path, "%s/flight.rank%d.json", dir, world_rank);
}

void flight_dump(const char* why) {
  if (!g_path[0] || g_dumped.exchange(true)) return;
  Out& o = g_out;
  o.n = 0;
  o.put("{");
  o.key("rank");
  o.num(static_cast<std::int64_t>(g_rank));
  o.text("why", why, 4096);
  o.field("now_ns", now_ns());
  o.put(",\n");
  o.key("collectives");
  o.put("[");
  const std::uint64_t next = g_next.load(std::memory_order_relaxed);
  const std::uint64_t first = next > kFlightRecords ? next - kFlightRecords : 1;
  bool any = false;
  for (std::uint64_t rec = first; rec < next; ++rec) {
    const Record& r = g_ring[rec % kFlightRecords];
    if (r.record.load(std::memory_order_acquire) != rec) continue;
    o.put(any ? ",\n" : "\n");
    put_record(o, r, rec);
    any = true;
  }
  o.put("],\n");
  o.key("streams");
  o.put("[");
  if (const Engine* e = g_engine.load(std::memory_order_acquire)) {
    const int n = g_streams.load(std::memory_order_relaxed);
    bool first_stream = true;
    for (int i = 0; i < n; ++i) {
      const Engine::StreamActivity a = e->activity(i);
      if (!a.ops && !a.running) continue;  // a stream that never ran an op
      o.put(first_stream ? "\n{" : ",\n{");
      first_stream = false;
      o.key("stream");
      o.str(g_stream_names[i]);
      o.field("ops", a.ops);
      if (a.running) {
        o.text("running", a.running);
        o.field("running_since_ns", a.since_ns);
      }
      if (a.last) {
        o.text("last", a.last);
        o.field("last_end_ns", a.last_end_ns);
      }
      o.put("}");
    }
  }
  o.put("]}\n");
  const int fd = ::open(g_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  for (std::size_t done = 0; done < o.n;) {
    const ssize_t w = ::write(fd, o.buf + done, o.n - done);
    if (w <= 0) break;
    done += static_cast<std::size_t>(w);
  }
  ::close(fd);
  o.n = 0;  // the same buffer, for a short note
  o.put("tide: rank ");
  o.num(static_cast<std::int64_t>(g_rank));
  o.put(": flight record written to ");
  o.put(g_path);
  o.put("\n");
  ssize_t ignored = ::write(2, o.buf, o.n);
  (void)ignored;
}

}  // namespace tide::detail

namespace tide {

void flight_record_engine(int world_rank, const Engine* engine, const std::string& trace_dir) {
  detail::flight_init(world_rank, engine, trace_dir.c_str());
}
void write_flight_record(const char* why) { detail::flight_dump(why); }

}  // namespace tide
