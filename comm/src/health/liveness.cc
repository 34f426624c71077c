#include "liveness.h"

#include "flight_recorder.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include <tide/comm/communicator.h>

namespace tide::detail {

namespace {

constexpr int kQueryTag = 1;
constexpr int kAnswerTag = 2;
constexpr int kNoticeTag = 3;  // a failure, told to every peer
// A notice's longest text: under the eager limits of Open MPI's transports
// (4 KiB in shared memory), so that its sends complete without the peer.
constexpr std::size_t kNoticeMax = 3000;
constexpr int kAnswerWords = 11;  // query, state, ident, seq, sig (3), size, skips: ident, first, last + 1

// What the comm thread is in. Written by the comm thread only, read by the
// answers (same thread) and by the SIGTERM handler (any thread): atomics,
// relaxed; a torn read only garbles a report.
enum State : std::uint64_t { kNone = 0, kIn = 1, kAfter = 2, kInCheck = 3 };
struct Where {
  std::atomic<std::uint64_t> state{kNone}, ident{0}, seq{0}, size{0}, group{0};
  std::atomic<std::uint64_t> w[3] = {0, 0, 0};
  // The latest run of consecutive skips, [skip_first, skip_last1) of
  // communicator skip_ident (skip_last1 0: none).
  std::atomic<std::uint64_t> skip_ident{0}, skip_first{0}, skip_last1{0};
};
Where g_where;
// The GPU collective (NCCL) each GPU's comm stream waits in (by device
// index, modulo kGpuRecords), for the SIGTERM report only: roll calls answer
// for the host collectives (g_where).
constexpr int kGpuRecords = 16;
Where g_gpu_where[kGpuRecords];
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "the SIGTERM handler reads these");

// Set once by liveness_init, before any reader.
bool g_ready = false;
MPI_Comm g_ctrl = MPI_COMM_NULL;
int g_world_rank = 0;
int g_world_size = 0;
std::uint64_t g_next_query = 0;
// Per world rank: on this host (same boot and pid namespace), and its pid.
std::vector<char> g_same_host;
std::vector<long> g_pid;
std::atomic<bool> g_ending{false};

std::uint64_t fnv(const void* data, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/// This host and pid namespace, as one word: processes with equal keys see
/// each other's pids.
std::uint64_t host_key() {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  if (boot.empty()) {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    boot = name;
  }
  std::uint64_t h = fnv(boot.data(), boot.size());
  struct stat st{};
  if (stat("/proc/self/ns/pid", &st) == 0) h = fnv(&st.st_ino, sizeof st.st_ino, h);
  return h;
}

/// Async-signal-safe: the state letter of /proc/PID/stat ('R', 'S', 'T',
/// 'Z', ...), 'X' when there is no such process, '?' when it cannot be read.
char pid_state(long pid) {
  if (pid <= 0) return '?';
  if (kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH ? 'X' : '?';
  char path[48] = "/proc/";
  char digits[24];
  int n = 0;
  for (long v = pid; v > 0 && n < 23; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  std::size_t len = std::strlen(path);
  while (n > 0) path[len++] = digits[--n];
  std::memcpy(path + len, "/stat", 6);
  const int fd = open(path, O_RDONLY);
  if (fd < 0) return errno == ENOENT ? 'X' : '?';
  char buf[512];
  const ssize_t got = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (got <= 0) return '?';
  // "pid (comm) S ...": the state follows the last ')'.
  for (ssize_t i = got - 1; i >= 0; --i)
    if (buf[i] == ')') return i + 2 < got ? buf[i + 2] : '?';
  return '?';
}

/// Async-signal-safe: gone means no such process, or a zombie.
bool pid_gone(long pid) {
  const char s = pid_state(pid);
  return s == 'X' || s == 'Z';
}

// The thread that makes this process's MPI calls (the comm thread; the
// user's thread under the naive engine): set as it enters a collective.
thread_local bool t_mpi_thread = false;

// Failure notices (liveness_tell_peers, told_failure).
struct Notices {
  std::mutex mutex;
  std::string mine;       // this rank's, once set never changed: its sends read it
  bool pending = false;   // set, not sent yet (left by a thread without MPI)
  bool sent = false;
  std::vector<MPI_Request> sends;  // not yet complete (MPI thread only)
  std::string heard;  // the first a peer told of
  // When this rank sent its notice or heard one: it gives the others a
  // moment before it ends the job (ending_job).
  std::chrono::steady_clock::time_point news_at{};
};
Notices& notices() {
  static auto* n = new Notices();  // never freed: sends may still read it at exit
  return *n;
}
std::atomic<bool> g_heard{false};
std::atomic<bool> g_notice_pending{false};
std::atomic<bool> g_notice_sends{false};  // sends of the notice not yet complete

/// MPI thread, with notices().mutex held: drives the notice's sends (MPI
/// moves a message only inside MPI calls: a connection to the peer still to
/// be made, a full queue) for up to `for_ms`; those left stay for the next
/// poll.
void progress_sends(Notices& n, int for_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(for_ms);
  while (!n.sends.empty()) {
    int done = 0;
    if (MPI_Testall(static_cast<int>(n.sends.size()), n.sends.data(), &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS ||
        done) {
      n.sends.clear();  // complete, or failed (a peer unreachable): nothing more to do
      return;
    }
    if (std::chrono::steady_clock::now() >= until) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

/// MPI thread, with notices().mutex held: one non-blocking send to each
/// peer whose process is not known gone.
void send_notice(Notices& n) {
  n.pending = false;
  g_notice_pending.store(false, std::memory_order_relaxed);
  for (int r = 0; r < g_world_size; ++r) {
    if (r == g_world_rank) continue;
    const auto i = static_cast<std::size_t>(r);
    if (g_same_host[i] && pid_gone(g_pid[i])) continue;
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Isend(n.mine.data(), static_cast<int>(n.mine.size()), MPI_CHAR, r, kNoticeTag, g_ctrl, &req) ==
        MPI_SUCCESS)
      n.sends.push_back(req);
  }
  n.sent = true;
  n.news_at = std::chrono::steady_clock::now();
  // Most complete at once (eager messages over open connections); a peer
  // not yet connected to takes a few milliseconds, one cut off forever.
  progress_sends(n, 100);
}

/// MPI thread: takes in the notices peers sent (the first is kept).
void take_notices() {
  for (;;) {
    int flag = 0, bytes = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kNoticeTag, g_ctrl, &flag, &st) != MPI_SUCCESS || !flag) return;
    if (MPI_Get_count(&st, MPI_CHAR, &bytes) != MPI_SUCCESS || bytes < 0) bytes = 0;
    std::string text(static_cast<std::size_t>(bytes), '\0');
    if (MPI_Recv(text.data(), bytes, MPI_CHAR, st.MPI_SOURCE, kNoticeTag, g_ctrl, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return;
    Notices& n = notices();
    std::lock_guard<std::mutex> lock(n.mutex);
    if (!n.heard.empty()) continue;
    n.heard = text + " (reported by rank " + std::to_string(st.MPI_SOURCE) + ", where it was found)";
    n.news_at = std::chrono::steady_clock::now();
    g_heard.store(true, std::memory_order_release);
  }
}

// ---- The SIGTERM report (async-signal-safe) ---------------------------------

struct Line {
  char buf[1024];
  std::size_t n = 0;
  void put(const char* s) {
    while (*s && n < sizeof buf - 2) buf[n++] = *s++;
  }
  void put(std::uint64_t v) {
    char d[24];
    int k = 0;
    do d[k++] = static_cast<char>('0' + v % 10); while ((v /= 10) && k < 24);
    while (k > 0 && n < sizeof buf - 2) buf[n++] = d[--k];
  }
};

void put_collective(Line& l, const Where& where = g_where) {
  CollectiveSig s;
  for (int i = 0; i < 3; ++i) s.w[i] = where.w[i].load(std::memory_order_relaxed);
  const CollectiveId id = CollectiveId::from_sig(s, where.seq.load(std::memory_order_relaxed));
  l.put(collective_kind_name(id.kind));
  l.put(" #");
  l.put(id.seq);
  l.put(" (");
  if (id.count >= 0) {
    if (id.devices > 1) {
      l.put(static_cast<std::uint64_t>(id.devices));
      l.put(" devices x ");
    }
    l.put(static_cast<std::uint64_t>(id.count));
    l.put(" x ");
    l.put(dtype_name(id.dtype));
    l.put(", ");
  }
  if (id.op) {
    l.put(reduce_op_name(*id.op));
    l.put(", ");
  }
  if (id.root >= 0) {
    l.put("root ");
    l.put(static_cast<std::uint64_t>(id.root));
    l.put(", ");
  }
  if (where.group.load(std::memory_order_relaxed)) l.put("group of ");
  l.put(where.size.load(std::memory_order_relaxed));
  l.put(" ranks)");
}

/// The first GPU record that is inside a collective, or null.
const Where* gpu_collective_in_flight() {
  for (const Where& w : g_gpu_where)
    if (w.state.load(std::memory_order_acquire) == kIn) return &w;
  return nullptr;
}

extern "C" void on_sigterm(int) {
  const int saved = errno;
  if (!g_ending.load(std::memory_order_relaxed)) {
    // First, who is gone: the other survivors are still here (each pauses
    // below before it ends).
    Line l;
    l.put("tide: rank ");
    l.put(static_cast<std::uint64_t>(g_world_rank));
    l.put(": ended by the launcher (SIGTERM) ");
    const std::uint64_t state = g_where.state.load(std::memory_order_relaxed);
    if (state == kIn) {
      l.put("while in ");
      put_collective(l);
    } else if (const Where* gpu = gpu_collective_in_flight()) {
      l.put("while in ");
      put_collective(l, *gpu);
      l.put(" on a GPU (NCCL)");
    } else if (state == kAfter || state == kInCheck) {
      l.put("in no collective (the last was ");
      put_collective(l);
      l.put(")");
    } else {
      l.put("before any collective");
    }
    int gone[64];
    int ngone = 0;
    for (int r = 0; r < g_world_size && ngone < 64; ++r)
      if (r != g_world_rank && g_same_host[static_cast<std::size_t>(r)] && pid_gone(g_pid[static_cast<std::size_t>(r)]))
        gone[ngone++] = r;
    if (ngone) {
      l.put(ngone == 1 ? "; rank " : "; ranks ");
      for (int i = 0; i < ngone; ++i) {
        if (i) l.put(", ");
        l.put(static_cast<std::uint64_t>(gone[i]));
      }
      l.put(ngone == 1 ? " vanished (its process is gone from this host)"
                       : " vanished (their processes are gone from this host)");
    } else {
      l.put("; every other rank on this host is still running");
    }
    l.buf[l.n++] = '\n';
    ssize_t ignored = write(2, l.buf, l.n);
    (void)ignored;
    flight_dump("ended by the launcher (SIGTERM)");
    // Stay a moment, so that the other survivors on this host, reporting
    // too, do not take this process for one that vanished (mpirun sends
    // SIGKILL after a second anyway).
    poll(nullptr, 0, 500);
  }
  signal(SIGTERM, SIG_DFL);
  raise(SIGTERM);  // delivered once this handler returns: ends as SIGTERM would
  errno = saved;
}

}  // namespace

void liveness_init(MPI_Comm world) {
  if (g_ready) return;
  int rank = 0, size = 0;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (MPI_Comm_dup(world, &g_ctrl) != MPI_SUCCESS) return;
  const long mine[2] = {static_cast<long>(host_key()), static_cast<long>(getpid())};
  std::vector<long> all(2 * static_cast<std::size_t>(size));
  if (MPI_Allgather(mine, 2, MPI_LONG, all.data(), 2, MPI_LONG, world) != MPI_SUCCESS) return;
  g_same_host.resize(static_cast<std::size_t>(size));
  g_pid.resize(static_cast<std::size_t>(size));
  for (std::size_t r = 0; r < g_pid.size(); ++r) {
    g_same_host[r] = all[2 * r] == mine[0];
    g_pid[r] = all[2 * r + 1];
  }
  g_world_rank = rank;
  g_world_size = size;
  g_ready = true;
}

namespace {
void enter(Where& where, std::uint64_t ident, const CollectiveId& id, int size, bool group) {
  where.state.store(kNone, std::memory_order_relaxed);
  const CollectiveSig s = id.sig();
  for (int i = 0; i < 3; ++i) where.w[i].store(s.w[i], std::memory_order_relaxed);
  where.ident.store(ident, std::memory_order_relaxed);
  where.seq.store(id.seq, std::memory_order_relaxed);
  where.size.store(static_cast<std::uint64_t>(size), std::memory_order_relaxed);
  where.group.store(group, std::memory_order_relaxed);
  where.state.store(kIn, std::memory_order_release);
}
}  // namespace

void liveness_enter(std::uint64_t ident, const CollectiveId& id, int size, bool group) {
  if (!g_ready) return;
  t_mpi_thread = true;
  enter(g_where, ident, id, size, group);
}

void liveness_leave() {
  if (g_ready) g_where.state.store(kAfter, std::memory_order_release);
}

void liveness_enter_gpu(int device, const CollectiveId& id, int size, bool group) {
  if (g_ready && device >= 0) enter(g_gpu_where[device % kGpuRecords], 0, id, size, group);
}

void liveness_leave_gpu(int device) {
  if (g_ready && device >= 0) g_gpu_where[device % kGpuRecords].state.store(kAfter, std::memory_order_release);
}

void liveness_skipped(std::uint64_t ident, std::uint64_t seq) {
  // One failed op often poisons several collectives in a row (a backward's
  // buckets): a run of them is kept, so a peer waiting in any is matched.
  const bool extends = g_where.skip_last1.load(std::memory_order_relaxed) == seq &&
                       g_where.skip_ident.load(std::memory_order_relaxed) == ident && seq > 0;
  if (!extends) {
    g_where.skip_last1.store(0, std::memory_order_relaxed);
    g_where.skip_ident.store(ident, std::memory_order_relaxed);
    g_where.skip_first.store(seq, std::memory_order_relaxed);
  }
  g_where.skip_last1.store(seq + 1, std::memory_order_relaxed);
}

void serve_queries(bool in_check) {
  if (!g_ready) return;
  t_mpi_thread = true;
  if (g_notice_pending.load(std::memory_order_relaxed) || g_notice_sends.load(std::memory_order_relaxed)) {
    Notices& n = notices();
    std::lock_guard<std::mutex> lock(n.mutex);
    if (n.pending) send_notice(n);
    progress_sends(n, 0);
    g_notice_sends.store(!n.sends.empty(), std::memory_order_relaxed);
  }
  take_notices();
  for (;;) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, g_ctrl, &flag, &st) != MPI_SUCCESS || !flag) return;
    std::uint64_t query = 0;
    if (MPI_Recv(&query, 1, MPI_UINT64_T, st.MPI_SOURCE, kQueryTag, g_ctrl, MPI_STATUS_IGNORE) != MPI_SUCCESS) return;
    const std::uint64_t state = g_where.state.load(std::memory_order_relaxed);
    const std::uint64_t answer[kAnswerWords] = {query,
                                                in_check && state != kIn ? kInCheck : state,
                                                g_where.ident.load(std::memory_order_relaxed),
                                                g_where.seq.load(std::memory_order_relaxed),
                                                g_where.w[0].load(std::memory_order_relaxed),
                                                g_where.w[1].load(std::memory_order_relaxed),
                                                g_where.w[2].load(std::memory_order_relaxed),
                                                g_where.size.load(std::memory_order_relaxed),
                                                g_where.skip_ident.load(std::memory_order_relaxed),
                                                g_where.skip_first.load(std::memory_order_relaxed),
                                                g_where.skip_last1.load(std::memory_order_relaxed)};
    MPI_Send(answer, kAnswerWords, MPI_UINT64_T, st.MPI_SOURCE, kAnswerTag, g_ctrl);
  }
}

void liveness_tell_peers(const std::string& reason) {
  if (!g_ready || g_world_size < 2 || g_heard.load(std::memory_order_acquire)) return;
  Notices& n = notices();
  std::lock_guard<std::mutex> lock(n.mutex);
  if (n.sent || n.pending || !n.heard.empty()) return;
  n.mine = reason.size() <= kNoticeMax ? reason : reason.substr(0, kNoticeMax - 3) + "...";
  n.pending = true;
  if (t_mpi_thread) {
    send_notice(n);
    g_notice_sends.store(!n.sends.empty(), std::memory_order_relaxed);
  } else {
    g_notice_pending.store(true, std::memory_order_relaxed);
  }
}

std::string told_failure() {
  if (!g_heard.load(std::memory_order_acquire)) return "";
  Notices& n = notices();
  std::lock_guard<std::mutex> lock(n.mutex);
  return n.heard;
}

bool process_gone(int world_rank) {
  if (!g_ready || world_rank < 0 || world_rank >= g_world_size || world_rank == g_world_rank) return false;
  const auto r = static_cast<std::size_t>(world_rank);
  return g_same_host[r] && pid_gone(g_pid[r]);
}

std::string process_note(int world_rank) {
  if (!g_ready || world_rank < 0 || world_rank >= g_world_size || world_rank == g_world_rank) return "";
  const auto r = static_cast<std::size_t>(world_rank);
  if (!g_same_host[r]) return "on another host";
  switch (pid_state(g_pid[r])) {
    case 'X':
    case 'Z': return "its process is gone from this host";
    case 'T': return "its process is stopped (SIGSTOP, Ctrl-Z)";
    case 't': return "its process is stopped by a debugger";
    case 'D': return "its process is in uninterruptible sleep (disk or swap)";
    case 'R':
    case 'S': return "its process is running on this host";
    default: return "";
  }
}

void RollCall::ask(const std::vector<int>& world_ranks, int me) {
  asked_ = true;
  me_ = me;
  world_ranks_ = world_ranks;
  // Asked again during one wait: earlier answers stay until newer ones come
  // (a timeout just after a new ask still has them).
  if (answers_.size() != world_ranks.size()) answers_.assign(world_ranks.size(), Answer{});
  if (!g_ready) return;
  // Unique across the job: the asker's world rank and its own count.
  query_ = (++g_next_query << 20) | static_cast<std::uint64_t>(g_world_rank);
  for (std::size_t i = 0; i < world_ranks.size(); ++i)
    if (static_cast<int>(i) != me) MPI_Send(&query_, 1, MPI_UINT64_T, world_ranks[i], kQueryTag, g_ctrl);
}

void RollCall::collect() {
  if (!g_ready || !asked_) return;
  for (;;) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kAnswerTag, g_ctrl, &flag, &st) != MPI_SUCCESS || !flag) return;
    std::uint64_t a[kAnswerWords] = {};
    if (MPI_Recv(a, kAnswerWords, MPI_UINT64_T, st.MPI_SOURCE, kAnswerTag, g_ctrl, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return;
    if (a[0] != query_) continue;  // an answer to an earlier wait's question
    const auto it = std::find(world_ranks_.begin(), world_ranks_.end(), st.MPI_SOURCE);
    if (it == world_ranks_.end()) continue;
    Answer& ans = answers_[static_cast<std::size_t>(it - world_ranks_.begin())];
    ans.got = true;
    ans.state = a[1];
    ans.ident = a[2];
    ans.seq = a[3];
    for (int i = 0; i < 3; ++i) ans.sig.w[i] = a[4 + i];
    ans.size = a[7];
    ans.skip_ident = a[8];
    ans.skip_first = a[9];
    ans.skip_last1 = a[10];
  }
}

std::string RollCall::skip_found(std::uint64_t ident, const CollectiveId& id) const {
  const std::uint64_t my_skip_ident = g_where.skip_ident.load(std::memory_order_relaxed);
  const std::uint64_t my_skip_first = g_where.skip_first.load(std::memory_order_relaxed);
  const std::uint64_t my_skip_last1 = g_where.skip_last1.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < answers_.size(); ++i) {
    const Answer& a = answers_[i];
    if (static_cast<int>(i) == me_ || !a.got) continue;
    int skipper = -1, runner = -1;
    CollectiveId skipped;
    if (a.skip_ident == ident && a.skip_first <= id.seq && id.seq < a.skip_last1) {
      // It skipped the collective this rank waits in.
      skipper = static_cast<int>(i);
      runner = me_;
      skipped = id;
    } else if (a.state == kIn && a.ident == ident && my_skip_ident == ident && my_skip_first <= a.seq &&
               a.seq < my_skip_last1) {
      // It waits in a collective this rank skipped.
      skipper = me_;
      runner = static_cast<int>(i);
      skipped = CollectiveId::from_sig(a.sig, a.seq);
    } else {
      continue;
    }
    return "collective #" + std::to_string(skipped.seq) + " (" + skipped.describe() + ") was skipped on " +
           name(skipper) + ", because its input comes from a failed op (that rank's error names it), and run on " +
           name(runner) + ": the ranks' collectives no longer pair up (found by the roll call of " + name(me_) +
           ", waiting in collective #" + std::to_string(id.seq) + ")";
  }
  return "";
}

std::vector<int> gone_members(const std::vector<int>& world_ranks, int me) {
  std::vector<int> out;
  for (std::size_t i = 0; i < world_ranks.size(); ++i)
    if (static_cast<int>(i) != me && process_gone(world_ranks[i])) out.push_back(static_cast<int>(i));
  return out;
}

std::string RollCall::name(int member) const {
  std::string s = "rank " + std::to_string(member);
  const int world = world_ranks_[static_cast<std::size_t>(member)];
  if (world != member || g_world_size != static_cast<int>(world_ranks_.size()))
    s += " (world rank " + std::to_string(world) + ")";
  return s;
}

std::string RollCall::absent(std::uint64_t ident, const CollectiveId& id, const std::string& peers) const {
  std::vector<int> missing;
  std::string why;
  for (std::size_t i = 0; i < answers_.size(); ++i) {
    if (static_cast<int>(i) == me_) continue;
    const Answer& a = answers_[i];
    if (a.got && a.state == kIn && a.ident == ident && a.seq == id.seq) continue;  // here, in this one
    missing.push_back(static_cast<int>(i));
    std::string what = name(static_cast<int>(i));
    if (process_gone(world_ranks_[i])) {
      what += " vanished (its process is gone from this host)";
    } else if (!a.got) {
      what += " did not answer: it is in no collective (computing, blocked or finished), or its host is stalled";
    } else {
      const std::string other = CollectiveId::from_sig(a.sig, a.seq)
                                    .str(a.ident == ident ? peers
                                                          : "another communicator of " + std::to_string(a.size) +
                                                                (a.size == 1 ? " rank" : " ranks"));
      what += a.state == kIn ? " is waiting in " + other
              : a.state == kInCheck ? " is waiting in a desync check, after " + other
              : a.state == kAfter ? " last ran " + other
                                  : " has run no collective";
    }
    why += (why.empty() ? "" : "; ") + what;
  }
  if (missing.empty()) return "";
  std::string list;
  for (int m : missing) list += (list.empty() ? "" : ", ") + std::to_string(m);
  return "ranks that did not arrive: " + list + " (" + why + ")";
}

}  // namespace tide::detail

namespace tide {

void install_termination_report() {
  if (!detail::g_ready) return;
  struct sigaction sa{};
  sa.sa_handler = detail::on_sigterm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
}

void ending_job() {
  detail::g_ending.store(true, std::memory_order_relaxed);
  // A failure told to the peers, or heard from one, moments ago: give those
  // waiting in a collective the moment they need to take it in (they poll
  // for it every millisecond or so) before MPI_Abort ends them, so that each
  // names the cause rather than the launcher's SIGTERM.
  constexpr auto kHearing = std::chrono::milliseconds(500);
  detail::Notices& n = detail::notices();
  std::chrono::steady_clock::time_point until{};
  {
    std::lock_guard<std::mutex> lock(n.mutex);
    if (n.sent || !n.heard.empty()) until = n.news_at + kHearing;
  }
  if (until > std::chrono::steady_clock::now()) std::this_thread::sleep_until(until);
}

}  // namespace tide
