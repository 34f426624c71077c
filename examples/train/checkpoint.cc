#include "checkpoint.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "safetensors.h"

namespace tide::train {

namespace {

constexpr const char* kFormat = "tide-checkpoint";
constexpr const char* kVersion = "2";
// A write goes to checkpoint.safetensors.tmp.PID first.
constexpr const char* kTemporarySuffix = ".tmp.";

/// FNV-1a of everything a resume trusts: the fingerprint, the step, and
/// each tensor's name, shape and values (a flipped digit of the step must
/// not resume at the wrong step).
std::uint64_t fnv1a(const std::string& fingerprint, std::int64_t step, const std::vector<StTensor>& tensors) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  auto text = [&](const std::string& s) { mix(s.c_str(), s.size() + 1); };  // with its terminator
  text(fingerprint);
  text(std::to_string(step));
  for (const StTensor& t : tensors) {
    text(t.name);
    for (std::int64_t d : t.shape) text(std::to_string(d));
    text("");
    mix(t.values.data(), t.values.size() * sizeof(double));
  }
  return h;
}

std::string hex(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw std::runtime_error(what + " " + path + ": " + std::strerror(err));
}

/// Whether process `pid` of this host may still write: it exists and is
/// neither a zombie (dead, not yet reaped: a writer killed moments ago) nor
/// exiting.
bool writer_alive(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat_line;
  if (!std::getline(stat_file, stat_line)) return true;  // cannot tell: keep its file
  // "pid (comm) S ...": the state follows the last ')'.
  const std::size_t close = stat_line.rfind(')');
  if (close == std::string::npos || close + 2 >= stat_line.size()) return true;
  const char state = stat_line[close + 2];
  return state != 'Z' && state != 'X' && state != 'x';
}

/// Closes `fd`, removes `tmp` and throws, keeping the error that happened first.
[[noreturn]] void abandon(int fd, const std::string& tmp, const std::string& what, int err) {
  ::close(fd);
  ::unlink(tmp.c_str());
  fail(what, tmp, err);
}

}  // namespace

std::string checkpoint_path(const std::string& dir) { return dir + "/checkpoint.safetensors"; }
std::string old_checkpoint_path(const std::string& dir) { return dir + "/checkpoint.tide"; }

void write_checkpoint(const std::string& dir, const CheckpointState& s) {
  StFile st;
  for (std::size_t i = 0; i < s.tensors.size(); ++i) {
    StTensor t;
    if (i < s.names.size()) {
      t.name = s.names[i];
    } else {
      t.name = "t";  // appended, not "t" + string: GCC 12's -Wrestrict misfires on that
      t.name += std::to_string(i);
    }
    t.shape = i < s.shapes.size() ? s.shapes[i] : std::vector<std::int64_t>{static_cast<std::int64_t>(s.tensors[i].size())};
    t.values = s.tensors[i];
    st.tensors.push_back(std::move(t));
  }
  st.metadata = {{"format", kFormat},
                 {"version", kVersion},
                 {"fingerprint", s.fingerprint},
                 {"step", std::to_string(s.step)},
                 {"fnv1a64", hex(fnv1a(s.fingerprint, s.step, st.tensors))}};
  std::string file;
  try {
    file = encode_safetensors(st);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("cannot write a checkpoint: ") + e.what());
  }

  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) fail("cannot create", dir, errno);
  const std::string path = checkpoint_path(dir);
  const std::string tmp = path + kTemporarySuffix + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail("cannot write", tmp, errno);
  std::size_t done = 0;
  while (done < file.size()) {
    const ssize_t n = ::write(fd, file.data() + done, file.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) abandon(fd, tmp, "cannot write", errno);
    if (n == 0) abandon(fd, tmp, "cannot write", EIO);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) abandon(fd, tmp, "cannot fsync", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot close", tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot rename to", path, err);
  }
  // The rename itself is durable only once the directory is synced.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd < 0) fail("cannot open", dir, errno);
  if (::fsync(dfd) != 0) {
    const int err = errno;
    ::close(dfd);
    fail("cannot fsync", dir, err);
  }
  ::close(dfd);
}

StaleTemporaries prepare_checkpoint_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw std::runtime_error("checkpoint directory " + dir + " is a file, not a directory");
  if (!fs::create_directories(dir, ec) && ec)
    throw std::runtime_error("cannot create the checkpoint directory " + dir + ": " + ec.message());
  // A file written and removed: the only test that holds for root, on
  // read-only mounts and on network file systems alike.
  const std::string probe = dir + "/.tide-write-test." + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) fail("cannot write in the checkpoint directory", dir, errno);
  ::close(fd);
  ::unlink(probe.c_str());

  StaleTemporaries stale;
  // This format's temporaries, and the earlier format's (checkpoint.tide).
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::string digits;
    for (const char* base : {"checkpoint.safetensors", "checkpoint.tide"}) {
      const std::string prefix = std::string(base) + kTemporarySuffix;
      if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0) digits = name.substr(prefix.size());
    }
    if (digits.empty()) continue;
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    // A writer still running on this host (another run sharing the directory) keeps its file.
    if (pid == ::getpid() || writer_alive(pid)) continue;
    std::error_code size_ec, remove_ec;
    const auto size = fs::file_size(entry.path(), size_ec);
    if (fs::remove(entry.path(), remove_ec)) {
      ++stale.files;
      stale.bytes += size_ec ? 0 : size;
    }
  }
  return stale;
}

std::optional<CheckpointState> read_checkpoint(const std::string& dir) {
  const std::string path = checkpoint_path(dir);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;  // only a missing file means "none"
    fail("cannot read", path, errno);
  }
  if (S_ISDIR(st.st_mode))
    throw std::runtime_error("cannot read the checkpoint " + path + ": it is a directory, not a file");
  if (!S_ISREG(st.st_mode))
    throw std::runtime_error("cannot read the checkpoint " + path + ": it is not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read", path, errno ? errno : EIO);
  std::string file;
  try {
    file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot read the checkpoint " + path + ": " + e.what());
  }
  if (in.bad()) fail("cannot read", path, EIO);
  StFile parsed = decode_safetensors(file, path);
  auto meta = [&](const char* key) -> const std::string& {
    const auto it = parsed.metadata.find(key);
    if (it == parsed.metadata.end())
      throw std::runtime_error(path + ": not a tide checkpoint (no '" + key + "' in its metadata)");
    return it->second;
  };
  if (meta("format") != kFormat)
    throw std::runtime_error(path + ": not a tide checkpoint (format '" + meta("format") + "')");
  if (meta("version") != kVersion)
    throw std::runtime_error(path + ": a tide checkpoint of version " + meta("version") + ", this trainer reads " +
                             kVersion);
  CheckpointState s;
  s.fingerprint = meta("fingerprint");
  const std::string& step = meta("step");
  std::size_t used = 0;
  try {
    s.step = std::stoll(step, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != step.size()) throw std::runtime_error(path + ": a step of '" + step + "' in its metadata");
  if (meta("fnv1a64") != hex(fnv1a(s.fingerprint, s.step, parsed.tensors)))
    throw std::runtime_error(path + ": checksum mismatch (the file is damaged)");
  for (StTensor& t : parsed.tensors) {
    s.names.push_back(t.name);
    s.shapes.push_back(t.shape);
    s.tensors.push_back(std::move(t.values));
  }
  return s;
}

}  // namespace tide::train
