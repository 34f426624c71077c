// save() and load(): tensors to and from the bytes of a safetensors file.
// The header is safetensors_header.cc's; the atomic write atomic_file.cc's.
#include <tide/ops/safetensors.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <limits>
#include <type_traits>

#include <tide/core/engine.h>
#include <tide/ops/creation.h>

#include "atomic_file.h"
#include "safetensors_header.h"

namespace tide {

namespace {

using detail::StEntry;

// The file's bytes are little-endian, and are copied to and from memory as they are.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

const char* st_dtype(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::b8: return "BOOL";
  }
  throw DTypeError("tide::save: a tensor's dtype is no DType");
}

/// An open file, closed however the reader leaves.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void io_failure(const std::string& path, const char* what, int err) {
  throw FileError("tide::load: cannot " + std::string(what) + " " + path + ": " + std::strerror(err));
}

/// Opens `path` for reading (a regular file) and says how long it is.
Fd open_for_reading(const std::string& path, std::uint64_t& size) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) io_failure(path, "open", errno);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) io_failure(path, "stat", errno);
  if (!S_ISREG(st.st_mode))
    throw FileError("tide::load: " + path + (S_ISDIR(st.st_mode) ? " is a directory" : " is not a regular file") +
                    ", not a safetensors file");
  size = static_cast<std::uint64_t>(st.st_size);
  return f;
}

/// Reads exactly `n` bytes into `out` (a shorter file is a truncated one).
void read_exactly(const Fd& f, char* out, std::uint64_t n, const std::string& path) {
  std::uint64_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(f.fd, out + done, n - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) io_failure(path, "read", errno);
    if (got == 0) throw FileError("tide::load: " + path + " ended after " + std::to_string(done) + " of " +
                                  std::to_string(n) + " bytes (it shrank while being read)");
    done += static_cast<std::uint64_t>(got);
  }
}

/// The header of `path`, checked against the file's size; `f` is then at
/// the first byte of the data.
detail::StHeader read_header(const Fd& f, std::uint64_t file_bytes, const std::string& path) {
  unsigned char first8[8] = {};
  if (file_bytes >= 8) read_exactly(f, reinterpret_cast<char*>(first8), 8, path);
  const std::uint64_t n = detail::header_size(first8, file_bytes, path);
  std::string text(n, '\0');
  read_exactly(f, text.data(), n, path);
  return detail::parse_header(text, file_bytes - 8 - n, path);
}

/// Refuses what tide cannot hold before any tensor is made: a dtype it has
/// no tensors of, more dimensions than a Shape has.
void check_takes(const StEntry& e, const std::string& path) {
  const std::string where = "tide::load: " + path + ": tensor '" + e.name + "'";
  if (e.dtype != "F32" && e.dtype != "F64" && e.dtype != "I32" && e.dtype != "I64" && e.dtype != "BOOL") {
    std::string lower = e.dtype;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    throw DTypeError(where + " is " + e.dtype + ": tide has no " + lower +
                     " yet (it holds F32, F64, I32, I64 and BOOL tensors)");
  }
  if (e.shape.size() > static_cast<std::size_t>(Shape::kMaxDims))
    throw ShapeError(where + " has " + std::to_string(e.shape.size()) + " dimensions; tide's tensors have at most " +
                     std::to_string(Shape::kMaxDims));
}

template <typename T>
std::vector<T> values_of(const char* bytes, std::uint64_t nbytes) {
  std::vector<T> v(nbytes / sizeof(T));
  if (nbytes > 0) std::memcpy(v.data(), bytes, nbytes);
  return v;
}

}  // namespace

void save(const std::string& path, const std::map<std::string, Tensor>& tensors,
          const std::map<std::string, std::string>& metadata, Loc loc) {
  std::vector<StEntry> entries;
  std::uint64_t at = 0;
  for (const auto& [name, t] : tensors) {
    if (name.empty()) throw ValueError("tide::save: " + path + ": a tensor has an empty name");
    if (name == "__metadata__")
      throw ValueError("tide::save: " + path + ": no tensor may be named __metadata__ (the header's metadata is)");
    if (!t.defined()) throw ValueError("tide::save: " + path + ": tensor '" + name + "' is undefined");
    StEntry e{name, st_dtype(t.dtype()), {t.shape().begin(), t.shape().end()}, at, at + t.nbytes()};
    at = e.end;
    entries.push_back(std::move(e));
  }
  std::string file = detail::encode_header(entries, metadata, path);
  file.reserve(file.size() + at);
  for (const auto& [name, t] : tensors)
    dispatch_dtype_or_bool(t.dtype(), [&, &t = t](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> packs bits: a byte each
        for (const bool b : t.template to_vector<bool>(loc)) file.push_back(b ? '\1' : '\0');
      } else {
        const std::vector<T> v = t.template to_vector<T>(loc);
        file.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
      }
    });
  detail::write_file_atomically(path, file, "tide::save");
}

SavedTensors load(const std::string& path, Device device, Loc loc) {
  current_engine().check_device(device);
  std::uint64_t file_bytes = 0;
  const Fd f = open_for_reading(path, file_bytes);
  detail::StHeader h = read_header(f, file_bytes, path);
  for (const StEntry& e : h.entries) check_takes(e, path);
  const std::uint64_t data_bytes = h.entries.empty() ? 0 : h.entries.back().end;
  std::string data(data_bytes, '\0');
  read_exactly(f, data.data(), data_bytes, path);

  SavedTensors out;
  out.metadata = std::move(h.metadata);
  for (const StEntry& e : h.entries) {
    const Shape shape(e.shape.begin(), e.shape.end());
    const char* bytes = data.data() + e.begin;
    const std::uint64_t nbytes = e.end - e.begin;
    Tensor t;
    if (e.dtype == "F32") t = from_vector(values_of<float>(bytes, nbytes), shape, device, loc);
    else if (e.dtype == "F64") t = from_vector(values_of<double>(bytes, nbytes), shape, device, loc);
    else if (e.dtype == "I32") t = from_vector(values_of<std::int32_t>(bytes, nbytes), shape, device, loc);
    else if (e.dtype == "I64") t = from_vector(values_of<std::int64_t>(bytes, nbytes), shape, device, loc);
    else t = from_vector(std::vector<bool>(bytes, bytes + nbytes), shape, device, loc);  // a nonzero byte is true
    out.tensors.emplace(e.name, std::move(t));
  }
  return out;
}

std::map<std::string, std::string> load_metadata(const std::string& path) {
  std::uint64_t file_bytes = 0;
  const Fd f = open_for_reading(path, file_bytes);
  return read_header(f, file_bytes, path).metadata;
}

}  // namespace tide
