#include "atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <tide/core/error.h>

namespace tide::detail {

namespace {

[[noreturn]] void fail(const char* who, const char* what, const std::string& path, int err) {
  throw FileError(std::string(who) + ": cannot " + what + " " + path + ": " + std::strerror(err));
}

/// Closes `fd`, removes `tmp` and throws, keeping the error that came first.
[[noreturn]] void abandon(int fd, const std::string& tmp, const char* who, const char* what, int err) {
  if (fd >= 0) ::close(fd);
  ::unlink(tmp.c_str());
  fail(who, what, tmp, err);
}

}  // namespace

std::string temporary_path(const std::string& path) {
  std::string tmp = path;  // appended piece by piece: GCC 12's -Wrestrict misfires on a + b + c here
  tmp += ".tmp.";
  // The writing thread's id (the process id in the main thread): two
  // threads saving the same path must not share a temporary.
  tmp += std::to_string(::gettid());
  return tmp;
}

void write_file_atomically(const std::string& path, std::string_view bytes, const char* who) {
  const std::string tmp = temporary_path(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(who, "write", tmp, errno);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) abandon(fd, tmp, who, "write", errno);
    if (n == 0) abandon(fd, tmp, who, "write", EIO);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) abandon(fd, tmp, who, "fsync", errno);
  if (::close(fd) != 0) abandon(-1, tmp, who, "close", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(who, "rename a file to", path, err);
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail(who, "open the directory", dir, errno);
  if (::fsync(dfd) != 0) {
    const int err = errno;
    ::close(dfd);
    fail(who, "fsync the directory", dir, err);
  }
  ::close(dfd);
}

}  // namespace tide::detail
