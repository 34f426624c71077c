#include "checkpoint.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "model.h"

namespace tide::train {

namespace {

constexpr const char* kFormat = "tide-checkpoint";
// 2: one file, every tensor F64; 3: the model and the optimizer apart, each
// tensor in its own dtype.
constexpr const char* kVersion = "3";
constexpr const char* kTemporarySuffix = ".tmp.";

/// FNV-1a of everything a resume trusts in one file: the fingerprint, the
/// step, and each tensor's name, dtype, shape and values (a flipped digit
/// of the step must not resume at the wrong step).
std::uint64_t fnv1a(const std::string& fingerprint, std::int64_t step, const std::map<std::string, Tensor>& tensors) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  auto text = [&](const std::string& s) { mix(s.c_str(), s.size() + 1); };  // with its terminator
  text(fingerprint);
  text(std::to_string(step));
  for (const auto& [name, t] : tensors) {
    text(name);
    text(dtype_name(t.dtype()));
    for (std::int64_t d : t.shape()) text(std::to_string(d));
    text("");
    const std::vector<double> values = t.to_vector<double>();  // exact for f32, f64 and i32
    mix(values.data(), values.size() * sizeof(double));
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

/// Tensors [begin, end) of `s` to `path`, with the metadata that identifies them.
void write_part(const std::string& path, const CheckpointState& s, std::size_t begin, std::size_t end) {
  std::map<std::string, Tensor> tensors;
  for (std::size_t i = begin; i < end; ++i) {
    std::string name;
    if (i < s.names.size()) {
      name = s.names[i];
    } else {
      name = "t";  // appended, not "t" + string: GCC 12's -Wrestrict misfires on that
      name += std::to_string(i);
    }
    const std::vector<std::int64_t> dims =
        i < s.shapes.size() ? s.shapes[i] : std::vector<std::int64_t>{static_cast<std::int64_t>(s.tensors[i].size())};
    const DType dtype = i < s.dtypes.size() ? s.dtypes[i] : DType::f64;
    if (!tensors.emplace(name, host_tensor(s.tensors[i], Shape(dims.begin(), dims.end()), dtype)).second)
      throw std::runtime_error("cannot write a checkpoint: the name '" + name + "' is given twice");
  }
  const std::map<std::string, std::string> metadata{{"format", kFormat},
                                                    {"version", kVersion},
                                                    {"fingerprint", s.fingerprint},
                                                    {"step", std::to_string(s.step)},
                                                    {"fnv1a64", hex(fnv1a(s.fingerprint, s.step, tensors))}};
  tide::save(path, tensors, metadata);
}

/// One file of a checkpoint, its metadata checked (format, version, step,
/// checksum); its step in `step`.
SavedTensors read_part(const std::string& path, std::int64_t& step) {
  SavedTensors f = tide::load(path);
  auto meta = [&](const char* key) -> const std::string& {
    const auto it = f.metadata.find(key);
    if (it == f.metadata.end())
      throw std::runtime_error(path + ": not a tide checkpoint (no '" + key + "' in its metadata)");
    return it->second;
  };
  if (meta("format") != kFormat)
    throw std::runtime_error(path + ": not a tide checkpoint (format '" + meta("format") + "')");
  if (meta("version") == "2")
    throw std::runtime_error(path + ": a tide checkpoint of version 2 (one file, every tensor F64), which this "
                             "trainer does not read: continue it with the version that wrote it, or start over "
                             "with --overwrite");
  if (meta("version") != kVersion)
    throw std::runtime_error(path + ": a tide checkpoint of version " + meta("version") + ", this trainer reads " +
                             kVersion);
  const std::string& text = meta("step");
  std::size_t used = 0;
  try {
    step = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw std::runtime_error(path + ": a step of '" + text + "' in its metadata");
  if (meta("fnv1a64") != hex(fnv1a(meta("fingerprint"), step, f.tensors)))
    throw std::runtime_error(path + ": checksum mismatch (the file is damaged)");
  return f;
}

}  // namespace

std::string checkpoint_path(const std::string& dir) { return dir + "/checkpoint.safetensors"; }
std::string optimizer_path(const std::string& dir) { return dir + "/optimizer.safetensors"; }
std::string previous_optimizer_path(const std::string& dir) { return dir + "/optimizer.previous.safetensors"; }
std::string old_checkpoint_path(const std::string& dir) { return dir + "/checkpoint.tide"; }

void write_checkpoint(const std::string& dir, const CheckpointState& s) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) fail("cannot create", dir, errno);
  const std::size_t split = std::min(s.model_tensors, s.tensors.size());
  // The optimizer's first, the one it replaces kept aside (a rename): a
  // write killed at any point leaves the model file of one step and an
  // optimizer file of that step, as optimizer.safetensors or beside it as
  // the previous one, which read_checkpoint takes then.
  const std::string opt = optimizer_path(dir);
  if (std::filesystem::exists(opt) && std::rename(opt.c_str(), previous_optimizer_path(dir).c_str()) != 0)
    fail("cannot keep the previous optimizer file", opt, errno);
  write_part(opt, s, split, s.tensors.size());
  write_part(checkpoint_path(dir), s, 0, split);
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
  // This format's temporaries (tide::save's PATH.tmp.PID), and the earliest format's.
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::string digits;
    for (const char* base : {"checkpoint.safetensors", "optimizer.safetensors", "checkpoint.tide"}) {
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

std::optional<CheckpointState> read_checkpoint(const std::string& dir, const std::vector<std::string>& keys) {
  const std::string path = checkpoint_path(dir);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;  // only a missing file means "none"
    fail("cannot read", path, errno);
  }
  if (S_ISDIR(st.st_mode))
    throw std::runtime_error("cannot read the checkpoint " + path + ": it is a directory, not a file");
  CheckpointState s;
  SavedTensors model = read_part(path, s.step);
  s.fingerprint = model.metadata.at("fingerprint");
  // The optimizer file of the model's step: optimizer.safetensors, or the
  // previous one when a write was killed after replacing that.
  const std::string opt_path = optimizer_path(dir), prev_path = previous_optimizer_path(dir);
  auto matches = [&](const SavedTensors& f, std::int64_t step) {
    return step == s.step && f.metadata.at("fingerprint") == s.fingerprint;
  };
  std::optional<SavedTensors> found;
  std::int64_t opt_step = 0;
  const bool have_opt = std::filesystem::exists(opt_path);
  if (have_opt) {
    SavedTensors f = read_part(opt_path, opt_step);
    if (matches(f, opt_step)) found = std::move(f);
  }
  if (!found && std::filesystem::exists(prev_path)) {
    std::int64_t prev_step = 0;
    SavedTensors f = read_part(prev_path, prev_step);
    if (matches(f, prev_step)) found = std::move(f);
  }
  if (!found && !have_opt)
    throw std::runtime_error(path + " has no optimizer.safetensors beside it: the checkpoint is incomplete (resume "
                             "needs both files; start over with --overwrite)");
  if (!found)
    throw std::runtime_error(path + " is at step " + std::to_string(s.step) + " but " + opt_path + " at step " +
                             std::to_string(opt_step) + (opt_step == s.step ? " of another run" : "") +
                             ", and no previous optimizer file matches it: start over with --overwrite, or put back "
                             "a matching pair");
  SavedTensors& opt = *found;
  s.model_tensors = model.tensors.size();
  std::map<std::string, Tensor> all = std::move(model.tensors);
  for (auto& [name, t] : opt.tensors)
    if (!all.emplace(name, t).second)
      throw std::runtime_error(opt_path + " holds '" + name + "', which " + path + " holds too");
  auto take = [&](const std::string& name, const Tensor& t) {
    s.names.push_back(name);
    s.tensors.push_back(t.to_vector<double>());
    s.shapes.emplace_back(t.shape().begin(), t.shape().end());
    s.dtypes.push_back(t.dtype());
  };
  for (const std::string& key : keys) {
    const auto it = all.find(key);
    if (it == all.end()) {  // check_resumable names what is missing
      s.names.emplace_back();
      s.tensors.emplace_back();
      s.shapes.push_back({0});
      s.dtypes.push_back(DType::f64);
      continue;
    }
    take(key, it->second);
    all.erase(it);
  }
  for (const auto& [name, t] : all) take(name, t);
  return s;
}

}  // namespace tide::train
