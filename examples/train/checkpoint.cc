#include "checkpoint.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace tide::train {

namespace {

constexpr char kMagic[8] = {'T', 'I', 'D', 'E', 'C', 'K', 'P', '1'};
// A write goes to checkpoint.tide.tmp.PID first.
constexpr const char* kTemporarySuffix = ".tmp.";

std::uint64_t fnv1a(const std::string& bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

class Reader {
 public:
  Reader(const std::string& bytes, std::string path) : b_(bytes), path_(std::move(path)) {}
  template <typename T>
  T get() {
    T v;
    need(sizeof v);
    std::memcpy(&v, b_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::size_t left() const { return b_.size() - pos_; }
  void bytes(void* dst, std::size_t n) {
    need(n);
    if (n == 0) return;  // dst may be null then (an empty tensor), and memcpy must not see it
    std::memcpy(dst, b_.data() + pos_, n);
    pos_ += n;
  }

 private:
  void need(std::size_t n) {
    if (b_.size() - pos_ < n) throw std::runtime_error(path_ + ": truncated checkpoint");
  }
  const std::string& b_;
  std::string path_;
  std::size_t pos_ = 0;
};

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw std::runtime_error(what + " " + path + ": " + std::strerror(err));
}

/// Closes `fd`, removes `tmp` and throws, keeping the error that happened first.
[[noreturn]] void abandon(int fd, const std::string& tmp, const std::string& what, int err) {
  ::close(fd);
  ::unlink(tmp.c_str());
  fail(what, tmp, err);
}

}  // namespace

std::string checkpoint_path(const std::string& dir) { return dir + "/checkpoint.tide"; }

void write_checkpoint(const std::string& dir, const CheckpointState& s) {
  std::string body;
  put<std::uint32_t>(body, static_cast<std::uint32_t>(s.fingerprint.size()));
  body += s.fingerprint;
  put<std::int64_t>(body, s.step);
  put<std::uint32_t>(body, static_cast<std::uint32_t>(s.tensors.size()));
  for (const auto& t : s.tensors) {
    put<std::uint64_t>(body, t.size());
    body.append(reinterpret_cast<const char*>(t.data()), t.size() * sizeof(double));
  }
  std::string file(kMagic, sizeof kMagic);
  file += body;
  put<std::uint64_t>(file, fnv1a(body));

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
  const std::string prefix = std::string("checkpoint.tide") + kTemporarySuffix;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    // A writer still running on this host (another run sharing the directory) keeps its file.
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    const auto size = fs::file_size(entry.path(), ec);
    if (fs::remove(entry.path(), ec)) {
      ++stale.files;
      stale.bytes += ec ? 0 : size;
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
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read", path, errno ? errno : EIO);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (file.size() < sizeof kMagic + sizeof(std::uint64_t) || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0)
    throw std::runtime_error(path + ": not a tide checkpoint (bad magic)");
  const std::string body = file.substr(sizeof kMagic, file.size() - sizeof kMagic - sizeof(std::uint64_t));
  std::uint64_t sum;
  std::memcpy(&sum, file.data() + file.size() - sizeof sum, sizeof sum);
  if (sum != fnv1a(body)) throw std::runtime_error(path + ": checksum mismatch (the file is damaged)");
  Reader r(body, path);
  CheckpointState s;
  // Lengths are checked against what the file holds before anything is
  // allocated: a forged length must not become a huge allocation.
  const auto fp_len = r.get<std::uint32_t>();
  if (fp_len > r.left()) throw std::runtime_error(path + ": truncated checkpoint (fingerprint)");
  s.fingerprint.resize(fp_len);
  r.bytes(s.fingerprint.data(), s.fingerprint.size());
  s.step = r.get<std::int64_t>();
  const auto count = r.get<std::uint32_t>();
  if (count > r.left() / sizeof(std::uint64_t)) throw std::runtime_error(path + ": truncated checkpoint (tensor count)");
  s.tensors.resize(count);
  for (auto& t : s.tensors) {
    const auto n = r.get<std::uint64_t>();
    if (n > r.left() / sizeof(double)) throw std::runtime_error(path + ": truncated checkpoint");
    t.resize(n);
    r.bytes(t.data(), n * sizeof(double));
  }
  return s;
}

}  // namespace tide::train
