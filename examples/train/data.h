// Datasets for the data-parallel trainer: a generated classification task
// (the default: no download needed) and a loader for MNIST's IDX files, plus
// the sampler that gives each rank its share of every global batch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tide::train {

/// Rows of `features` floats with an integer label in [0, classes).
struct Dataset {
  std::int64_t rows = 0;
  std::int64_t features = 0;
  int classes = 0;
  std::vector<float> x;         // rows x features, row-major
  std::vector<std::int32_t> y;  // rows
};

struct Split {
  Dataset train, test;
  std::string description;
};

/// A deterministic task an MLP can learn and a linear model cannot fully:
/// each class is a union of `clusters` Gaussian blobs in `features`
/// dimensions, the blobs of all classes interleaved. The same arguments give
/// the same bytes on every machine (Philox, no platform RNG).
Split make_generated(std::int64_t train_rows, std::int64_t test_rows, std::int64_t features,
                     int classes, std::uint64_t seed, int clusters = 3, double noise = 0.9);

/// MNIST from `dir`: train-images-idx3-ubyte, train-labels-idx1-ubyte,
/// t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (uncompressed; a ".idx3-ubyte"
/// spelling with a dot works too). Pixels scaled to [0, 1] and standardised
/// with MNIST's mean and deviation. Throws std::runtime_error naming the file
/// and what is wrong (missing, a directory, gzip-compressed, bad magic, not
/// N x rows x cols images or N labels, empty images, counts that disagree).
Split load_mnist(const std::string& dir);

/// Reads one IDX file: its dimensions and its unsigned bytes (the only
/// element type MNIST uses). Exposed for tests.
struct Idx {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> data;
};
Idx read_idx(const std::string& path);

/// A digest of the rows, labels and sizes of `d` ("rows x features, classes,
/// fnv1a64:..."): the same data gives the same digest wherever it was read from.
std::string content_digest(const Dataset& d);

/// Which rows each rank uses at each step. Every epoch has its own seeded
/// permutation of the training rows (the same on every rank); step t of an
/// epoch takes the global batch perm[t*G, (t+1)*G), G = batch x ranks, and
/// rank r takes the block [r*batch, (r+1)*batch) of it. So 1 rank with batch
/// G and R ranks with batch G/R see the same global batches.
class Sampler {
 public:
  Sampler(std::int64_t rows, std::int64_t batch_per_rank, int rank, int ranks, std::uint64_t seed);
  std::int64_t steps_per_epoch() const { return steps_per_epoch_; }
  /// The rows rank `rank` uses at global step `step` (epochs follow each other).
  std::vector<std::int64_t> rows_for(std::int64_t step);

 private:
  void shuffle(std::int64_t epoch);
  std::int64_t rows_, batch_, steps_per_epoch_;
  int rank_, ranks_;
  std::uint64_t seed_;
  std::int64_t epoch_ = -1;
  std::vector<std::int64_t> perm_;
};

/// Gathers `rows` of `d` into contiguous host buffers.
void gather_rows(const Dataset& d, const std::vector<std::int64_t>& rows, std::vector<float>& x,
                 std::vector<std::int32_t>& y);

}  // namespace tide::train
