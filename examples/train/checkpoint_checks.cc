#include "checkpoint_checks.h"

#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

namespace tide::train {

namespace {

// The interval sums hold one value per rank of the run that wrote them.
constexpr std::size_t kMaxRanks = std::size_t{1} << 20;

bool whole(double v) { return std::isfinite(v) && v == std::floor(v); }

/// A fingerprint's fields, as run.cc writes them: "widths=784,10 lr=0.1 ...
/// data=60000 x 784, 10 classes, fnv1a64:...": a word holding '=' starts a
/// field; words without one continue the value before.
std::map<std::string, std::string> fields_of(const std::string& fingerprint) {
  std::map<std::string, std::string> out;
  std::istringstream in(fingerprint);
  std::string word, key;
  while (in >> word) {
    const std::size_t eq = word.find('=');
    if (eq != std::string::npos) {
      key = word.substr(0, eq);
      out[key] = word.substr(eq + 1);
    } else {
      out[key] += (out[key].empty() ? "" : " ") + word;
    }
  }
  return out;
}

/// What a changed field of the fingerprint means for the resumed run, or
/// "" when the run cannot continue across it.
std::string what_changes(const std::string& field, const std::string& step) {
  if (field == "lr") return "the learning rate changes from here on";
  if (field == "momentum") return "the momentum changes from here on (its accumulated state is kept)";
  if (field == "global_batch")
    return "the steps per epoch change, so from step " + step +
           " on the data comes in another order than an uninterrupted run's, and the open log interval starts "
           "afresh";
  if (field == "seed") return "from step " + step + " on the data comes in another order";
  if (field == "dtype") return "the checkpoint's values are converted";
  if (field == "accum_steps")
    return "each step's rows are split into another number of micro-batches (the same rows and the same update, "
           "up to rounding), and the open log interval starts afresh";
  return "";
}

/// Why a changed field cannot be continued across.
std::string why_not(const std::string& field) {
  if (field == "widths") return "the model's layer widths differ, so its parameters cannot be loaded";
  if (field == "data") return "the training data differ";
  if (field == "opt") return "the optimizer differs, and its state is another's";
  return "the runs differ";
}

}  // namespace

std::vector<std::string> checkpoint_tensor_names(int layers, bool adam) {
  std::vector<std::string> params;
  for (int l = 0; l < layers; ++l) {
    params.push_back("layer " + std::to_string(l) + " weights");
    params.push_back("layer " + std::to_string(l) + " biases");
  }
  std::vector<std::string> names = params;
  for (const auto& p : params) names.push_back((adam ? "Adam's first moment of " : "momentum of ") + p);
  if (adam)
    for (const auto& p : params) names.push_back("Adam's second moment of " + p);
  names.insert(names.end(), {"loss sums of the open log interval", "correct counts of the open log interval",
                             "first step of the open log interval"});
  return names;
}

std::vector<std::string> checkpoint_tensor_keys(int layers, bool adam) {
  std::vector<std::string> params;
  for (int l = 0; l < layers; ++l) {
    // Linear layer l is module 2l of the nn.Sequential (a ReLU between each two).
    params.push_back(std::to_string(2 * l) + ".weight");
    params.push_back(std::to_string(2 * l) + ".bias");
  }
  std::vector<std::string> keys = params;
  for (const auto& p : params) keys.push_back((adam ? "adam_m." : "momentum.") + p);
  if (adam)
    for (const auto& p : params) keys.push_back("adam_v." + p);
  keys.insert(keys.end(), {"log.loss_sums", "log.correct_counts", "log.first_step"});
  return keys;
}

ResumeNotes check_resumable(const CheckpointState& ck, const ResumeExpectation& want) {
  const std::string where = "the checkpoint in " + want.dir;
  auto bad = [&](const std::string& what) { throw std::runtime_error(where + " " + what); };
  ResumeNotes notes;
  const auto had = fields_of(ck.fingerprint), now = fields_of(want.fingerprint);
  std::map<std::string, std::string> keys_of_both = had;
  keys_of_both.insert(now.begin(), now.end());
  for (const auto& [field, _] : keys_of_both) {
    const auto a = had.find(field), b = now.find(field);
    // A run without accumulation leaves the field out: one micro-batch.
    const std::string none = field == "accum_steps" ? "1" : "(none)";
    const std::string was = a == had.end() ? none : a->second, is = b == now.end() ? none : b->second;
    if (was == is) continue;
    const std::string change = what_changes(field, std::to_string(ck.step));
    if (change.empty())
      bad("cannot be continued by this run: " + why_not(field) + " (" + field + " " + was + " there, " + is +
          " here)\n  it has  " + ck.fingerprint + "\n  this is " + want.fingerprint);
    notes.warnings.push_back("resuming with " + field + " " + is + " where the checkpoint's run had " + was + ": " +
                             change);
    if (field == "global_batch" || field == "accum_steps") notes.restart_log_interval = true;
  }
  const std::size_t n = want.state_sizes.size();
  for (std::size_t i = 0; i < want.keys.size(); ++i)
    if (i >= ck.names.size() || ck.names[i].empty())
      bad("has no '" + want.keys[i] + "' (the " + want.names[i] + ")");
  if (ck.tensors.size() != n + 3)
    bad("holds " + std::to_string(ck.tensors.size()) + " tensors, expected " + std::to_string(n + 3) +
        (ck.names.size() > n + 3 ? " ('" + ck.names[n + 3] + "' is not one this run keeps)" : ""));
  for (std::size_t i = 0; i < n; ++i)
    if (static_cast<std::int64_t>(ck.tensors[i].size()) != want.state_sizes[i])
      bad("has " + std::to_string(ck.tensors[i].size()) + " values for the " + want.names[i] + ", expected " +
          std::to_string(want.state_sizes[i]));
  if (ck.step < 0 || ck.step > want.total_steps)
    bad("is at step " + std::to_string(ck.step) +
        (ck.step < 0 ? ", which is negative" : ", past the end of this run (" + std::to_string(want.total_steps) + " steps)"));
  if (const std::string nan = first_non_finite(ck.tensors, want.names); !nan.empty()) bad("holds " + nan);

  const auto& losses = ck.tensors[n];
  const auto& corrects = ck.tensors[n + 1];
  const auto& first = ck.tensors[n + 2];
  if (losses.empty() || losses.size() > kMaxRanks || corrects.size() != losses.size())
    bad("has malformed interval sums (" + std::to_string(losses.size()) + " loss sums, " +
        std::to_string(corrects.size()) + " correct counts; expected one of each per rank)");
  for (double c : corrects)
    if (!whole(c) || c < 0 || c > 2147483647.0)
      bad("has a correct count of " + std::to_string(c) + ", expected a whole number in [0, 2^31)");
  if (first.size() != 1 || !whole(first[0]) || first[0] < 0 || first[0] > static_cast<double>(ck.step))
    bad("has a log interval that starts at step " + (first.size() == 1 ? std::to_string(first[0]) : std::string("?")) +
        ", expected a whole number in [0, " + std::to_string(ck.step) + "]");
  return notes;
}

std::string first_non_finite(const std::vector<std::vector<double>>& tensors, const std::vector<std::string>& names) {
  for (std::size_t i = 0; i < tensors.size(); ++i)
    for (std::size_t j = 0; j < tensors[i].size(); ++j)
      if (!std::isfinite(tensors[i][j]))
        return std::string(std::isnan(tensors[i][j]) ? "NaN" : "an infinity") + " in the " +
               (i < names.size() ? names[i] : "tensor " + std::to_string(i)) + " (value " + std::to_string(j) + ")";
  return "";
}

}  // namespace tide::train
