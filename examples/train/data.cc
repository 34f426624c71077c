#include "data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <stdexcept>

#include <tide/ops/philox.h>

namespace tide::train {

namespace {

/// A stream of uniform doubles in [0, 1) from Philox: a pure function of
/// (seed, position), identical everywhere.
class Uniform {
 public:
  explicit Uniform(std::uint64_t seed) : seed_(seed) {}
  double next() {
    if (lane_ == 4) {
      block_ = philox::philox4x32_10(counter_++, seed_);
      lane_ = 0;
    }
    return philox::to_unit(block_.v[lane_++]);
  }
  double normal() {
    // Box-Muller; 1 - u keeps the log's argument in (0, 1].
    const double u1 = 1.0 - next(), u2 = next();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  std::int64_t below(std::int64_t n) { return static_cast<std::int64_t>(next() * static_cast<double>(n)); }

 private:
  std::uint64_t seed_;
  std::uint64_t counter_ = 0;
  philox::Block block_{};
  int lane_ = 4;
};

void fill(Dataset& d, std::int64_t rows, std::int64_t features, int classes) {
  d.rows = rows;
  d.features = features;
  d.classes = classes;
  d.x.assign(static_cast<std::size_t>(rows * features), 0.0f);
  d.y.assign(static_cast<std::size_t>(rows), 0);
}

}  // namespace

Split make_generated(std::int64_t train_rows, std::int64_t test_rows, std::int64_t features,
                     int classes, std::uint64_t seed, int clusters, double noise) {
  if (train_rows < 1 || test_rows < 0 || features < 1 || classes < 2 || clusters < 1)
    throw std::invalid_argument("make_generated: need train_rows >= 1, test_rows >= 0, features >= 1, "
                                "classes >= 2, clusters >= 1");
  // Blob centres on a sphere-ish shell, so every class spans several regions.
  Uniform centres_rng(seed ^ 0x5eed'c1a5'5e5ull);
  const std::int64_t nblobs = static_cast<std::int64_t>(classes) * clusters;
  std::vector<double> centre(static_cast<std::size_t>(nblobs * features));
  for (auto& c : centre) c = 0.5 * centres_rng.normal();
  Split s;
  auto generate = [&](Dataset& d, std::int64_t rows, std::uint64_t stream) {
    fill(d, rows, features, classes);
    Uniform rng(seed * 0x9E3779B97F4A7C15ull + stream);
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::int64_t blob = rng.below(nblobs);
      d.y[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(blob % classes);
      for (std::int64_t f = 0; f < features; ++f)
        d.x[static_cast<std::size_t>(i * features + f)] =
            static_cast<float>(centre[static_cast<std::size_t>(blob * features + f)] + noise * rng.normal());
    }
  };
  generate(s.train, train_rows, 1);
  generate(s.test, test_rows, 2);
  s.description = "generated: " + std::to_string(classes) + " classes x " + std::to_string(clusters) +
                  " blobs in " + std::to_string(features) + " dims, " + std::to_string(train_rows) +
                  " train / " + std::to_string(test_rows) + " test rows (seed " + std::to_string(seed) + ")";
  return s;
}

std::string content_digest(const Dataset& d) {
  std::uint64_t h = 1469598103934665603ull;
  // FNV-1a over 8-byte words: a byte at a time is slow for MNIST's 188 MB.
  auto mix = [&h](const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, b + i, 8);
      h = (h ^ w) * 1099511628211ull;
    }
    for (; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  mix(d.x.data(), d.x.size() * sizeof(float));
  mix(d.y.data(), d.y.size() * sizeof(std::int32_t));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::to_string(d.rows) + " x " + std::to_string(d.features) + ", " + std::to_string(d.classes) +
         " classes, fnv1a64:" + hex;
}

Idx read_idx(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::runtime_error(path + " is a directory, expected an IDX file");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::ifstream gz(path + ".gz", std::ios::binary);
    if (gz)
      throw std::runtime_error(path + ".gz is compressed: unpack it first (gunzip " + path + ".gz)");
    throw std::runtime_error("cannot open " + path);
  }
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b)
    throw std::runtime_error(path + " is gzip-compressed: unpack it first");
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0)
    throw std::runtime_error(path + ": not an IDX file (bad magic)");
  if (bytes[2] != 0x08)
    throw std::runtime_error(path + ": IDX element type " + std::to_string(bytes[2]) +
                             " is not unsigned bytes (0x08)");
  const int ndims = bytes[3];
  if (ndims < 1 || bytes.size() < 4 + 4 * static_cast<std::size_t>(ndims))
    throw std::runtime_error(path + ": truncated IDX header");
  Idx idx;
  std::size_t count = 1;
  for (int d = 0; d < ndims; ++d) {
    const std::uint8_t* p = bytes.data() + 4 + 4 * d;
    const std::uint32_t v = (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
                            (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
    idx.dims.push_back(v);
    // Checked as it grows, so a forged header cannot wrap the product around.
    if (v != 0 && count > (bytes.size() + 1) / v)
      throw std::runtime_error(path + ": header promises more data than the file's " +
                               std::to_string(bytes.size()) + " bytes");
    count *= v;
  }
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(ndims);
  if (bytes.size() - header != count)
    throw std::runtime_error(path + ": header promises " + std::to_string(count) + " bytes of data, file has " +
                             std::to_string(bytes.size() - header));
  idx.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return idx;
}

namespace {

std::string find_idx(const std::string& dir, const std::string& stem, const std::string& kind) {
  const std::string a = dir + "/" + stem + "-" + kind, b = dir + "/" + stem + "." + kind;
  if (std::ifstream(a)) return a;
  if (std::ifstream(b)) return b;
  return a;  // read_idx names it in its error
}

std::string dims_text(const std::vector<std::int64_t>& dims) {
  std::string t;
  for (auto v : dims) t += (t.empty() ? "" : " x ") + std::to_string(v);
  return t;
}

Dataset mnist_part(const std::string& dir, const std::string& stem) {
  const std::string images_path = find_idx(dir, stem + "-images", "idx3-ubyte");
  const std::string labels_path = find_idx(dir, stem + "-labels", "idx1-ubyte");
  Idx images = read_idx(images_path);
  Idx labels = read_idx(labels_path);
  if (images.dims.size() != 3)
    throw std::runtime_error(images_path + ": expected images x rows x columns (3 dimensions), the file has " +
                             std::to_string(images.dims.size()) + " (" + dims_text(images.dims) + ")");
  if (images.dims[1] == 0 || images.dims[2] == 0)
    throw std::runtime_error(images_path + ": images of " + std::to_string(images.dims[1]) + " x " +
                             std::to_string(images.dims[2]) + " pixels hold nothing to learn from");
  if (labels.dims.size() != 1)
    throw std::runtime_error(labels_path + ": expected one label per image (1 dimension), the file has " +
                             std::to_string(labels.dims.size()) + " (" + dims_text(labels.dims) + ")");
  if (images.dims[0] != labels.dims[0])
    throw std::runtime_error("MNIST " + stem + ": images and labels disagree: " + images_path + " holds " +
                             std::to_string(images.dims[0]) + " images, " + labels_path + " " +
                             std::to_string(labels.dims[0]) + " labels");
  Dataset d;
  const std::int64_t features = images.dims[1] * images.dims[2];
  fill(d, images.dims[0], features, 10);
  constexpr double kMean = 0.1307, kStd = 0.3081;  // MNIST's pixel statistics
  for (std::size_t i = 0; i < images.data.size(); ++i)
    d.x[i] = static_cast<float>((images.data[i] / 255.0 - kMean) / kStd);
  for (std::size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] > 9)
      throw std::runtime_error("MNIST " + stem + ": label " + std::to_string(labels.data[i]) + " at row " +
                               std::to_string(i) + " is not a digit");
    d.y[i] = labels.data[i];
  }
  return d;
}

}  // namespace

Split load_mnist(const std::string& dir) {
  Split s;
  s.train = mnist_part(dir, "train");
  s.test = mnist_part(dir, "t10k");
  if (s.test.features != s.train.features)
    throw std::runtime_error("MNIST in " + dir + ": the test images have " + std::to_string(s.test.features) +
                             " pixels each, the training images " + std::to_string(s.train.features) +
                             ": a model takes one size (are they from two data sets?)");
  s.description = "MNIST from " + dir + ": " + std::to_string(s.train.rows) + " train / " +
                  std::to_string(s.test.rows) + " test images";
  return s;
}

Sampler::Sampler(std::int64_t rows, std::int64_t batch_per_rank, int rank, int ranks, std::uint64_t seed)
    : rows_(rows), batch_(batch_per_rank), rank_(rank), ranks_(ranks), seed_(seed) {
  if (batch_per_rank < 1) throw std::invalid_argument("batch per rank must be >= 1");
  steps_per_epoch_ = rows / (batch_per_rank * ranks);
  if (steps_per_epoch_ < 1)
    throw std::invalid_argument("the training set (" + std::to_string(rows) +
                                " rows) is smaller than one global batch (" +
                                std::to_string(batch_per_rank * ranks) + ")");
}

void Sampler::shuffle(std::int64_t epoch) {
  perm_.resize(static_cast<std::size_t>(rows_));
  std::iota(perm_.begin(), perm_.end(), 0);
  Uniform rng(seed_ * 0xD1B54A32D192ED03ull + static_cast<std::uint64_t>(epoch));
  for (std::int64_t i = rows_ - 1; i > 0; --i)  // Fisher-Yates
    std::swap(perm_[static_cast<std::size_t>(i)], perm_[static_cast<std::size_t>(rng.below(i + 1))]);
  epoch_ = epoch;
}

std::vector<std::int64_t> Sampler::rows_for(std::int64_t step) {
  const std::int64_t epoch = step / steps_per_epoch_, t = step % steps_per_epoch_;
  if (epoch != epoch_) shuffle(epoch);
  const std::int64_t first = t * batch_ * ranks_ + rank_ * batch_;
  return {perm_.begin() + first, perm_.begin() + first + batch_};
}

void gather_rows(const Dataset& d, const std::vector<std::int64_t>& rows, std::vector<float>& x,
                 std::vector<std::int32_t>& y) {
  x.resize(rows.size() * static_cast<std::size_t>(d.features));
  y.resize(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto r = static_cast<std::size_t>(rows[i]);
    std::copy_n(d.x.begin() + static_cast<std::ptrdiff_t>(r * static_cast<std::size_t>(d.features)),
                d.features, x.begin() + static_cast<std::ptrdiff_t>(i * static_cast<std::size_t>(d.features)));
    y[i] = d.y[r];
  }
}

}  // namespace tide::train
