// Set-up of a run: the model on its device, the gradient reducer, the
// optimizer state and the interval sums, and the engine's settings for the loop.
#include "run.h"

#include <algorithm>
#include <sstream>

#include "checkpoint_checks.h"

namespace tide::train {

namespace {

const TrainConfig& validated(const TrainConfig& cfg) {
  cfg.validate();
  return cfg;
}

std::int64_t total_steps(const TrainConfig& cfg, std::int64_t steps_per_epoch, int ranks) {
  if (static_cast<double>(cfg.log_every) * static_cast<double>(cfg.batch) * cfg.accum_steps * ranks >= 2147483648.0)
    throw ValueError("train: log interval x global batch must stay below 2^31 (the correct-count is i32)");
  if (cfg.epochs == 0) return cfg.max_steps > 0 ? cfg.max_steps : 2 * steps_per_epoch;
  const std::int64_t total = steps_per_epoch * cfg.epochs;
  return cfg.max_steps > 0 ? std::min(total, cfg.max_steps) : total;
}

/// The model for `data`'s features and classes, on cfg.device once the
/// engine has checked that it can use that device.
Model model_for(Engine& e, const Split& data, const TrainConfig& cfg) {
  std::vector<std::int64_t> widths{data.train.features};
  widths.insert(widths.end(), cfg.hidden.begin(), cfg.hidden.end());
  widths.push_back(data.train.classes);
  e.check_device(cfg.device);
  return make_model(widths, cfg.dtype, cfg.device, cfg.seed);
}

/// What a checkpoint must have been written by to resume this run.
std::string run_fingerprint(const TrainConfig& c, const Split& data, int ranks) {
  std::ostringstream os;
  os << "widths=" << data.train.features;
  for (auto h : c.hidden) os << "," << h;
  os << "," << data.train.classes << " dtype=" << dtype_name(c.dtype) << " opt=" << c.optimizer
     << " lr=" << c.lr << " momentum=" << c.momentum << " global_batch=" << c.batch * c.accum_steps * ranks;
  // A checkpoint's interval sums are over micro-batches, so a resume keeps
  // their number (written only when there are several, so that runs without
  // accumulation keep the fingerprint they had).
  if (c.accum_steps > 1) os << " accum_steps=" << c.accum_steps;
  os << " seed=" << c.seed << " data=" << content_digest(data.train);
  return os.str();
}

}  // namespace

Run::Run(Communicator& comm_, const Split& data_, const TrainConfig& cfg_, const Progress& progress_)
    : comm(comm_),
      data(data_),
      cfg(validated(cfg_)),
      progress(progress_),
      e(current_engine()),
      rank(comm.rank()),
      ranks(comm.size()),
      dev(cfg.device),
      timeline(cfg.trace && dev.is_cpu()),
      own_trace(timeline && !e.tracing()),
      adam(cfg.optimizer == "adam"),
      sampler(data.train.rows, cfg.batch * cfg.accum_steps, rank, ranks, cfg.seed),
      steps_per_epoch(sampler.steps_per_epoch()),
      total(total_steps(cfg, steps_per_epoch, ranks)),
      model(model_for(e, data, cfg)),
      reducer(comm, model.params, {cfg.bucket_mb, ReduceOp::avg, cfg.first_bucket_mb}) {
  // The parameters are autograd's leaves. Each one's gradient goes to the
  // reducer as soon as backward has summed it (so a full bucket starts
  // reducing while the layers below are still being pushed); the reducer
  // keeps it, and sums micro-batches itself, so .grad is cleared again.
  for (std::size_t i = 0; i < model.params.size(); ++i) {
    model.params[i].set_requires_grad();
    register_post_accumulate_grad_hook(model.params[i], [this, i](const Tensor& g) {
      reducer.push_gradient(static_cast<int>(i), g);
      model.params[i].set_grad(Tensor());
    });
  }
  for (const Tensor& p : model.params) {
    state1.push_back(zeros(p.shape(), {cfg.dtype, dev}));
    if (adam) state2.push_back(zeros(p.shape(), {cfg.dtype, dev}));
  }
  loss_sum = zeros(Shape{}, {cfg.dtype, dev});
  correct_sum = zeros(Shape{}, {DType::i32, dev});
  if (rank == 0) fingerprint = run_fingerprint(cfg, data, ranks);
  // Opened at start: a path that cannot be written stops the run before
  // the work. Every rank learns it (the others would wait for rank 0).
  int metrics_ok = 1;
  if (rank == 0 && !cfg.metrics_path.empty()) {
    metrics = std::make_unique<std::ofstream>(cfg.metrics_path, std::ios::trunc);
    metrics_ok = *metrics ? 1 : 0;
  }
  if (!cfg.metrics_path.empty()) {
    Tensor ok = comm.broadcast(full(Shape{}, metrics_ok, {DType::i32}), 0);
    if (ok.item<int>() == 0) throw std::runtime_error("--metrics " + cfg.metrics_path + ": cannot write it");
  }
  // Both given, and the epochs end first: said, not silent.
  if (rank == 0 && progress.out && cfg.epochs > 0 && cfg.max_steps > total)
    *progress.out << "note: --epochs " << cfg.epochs << " ends the run after " << total << " steps (" << steps_per_epoch
                  << " per epoch), before --max-steps " << cfg.max_steps
                  << " (leave --epochs out to run every step asked for)\n";
  names = checkpoint_tensor_names(model.layers(), adam);
  keys = checkpoint_tensor_keys(model.layers(), adam);
}

Tensor Run::to_dev(const Tensor& host) const { return dev.is_cpu() ? host : copy_to(host, dev); }

std::vector<Tensor*> Run::everything() {
  std::vector<Tensor*> all;
  for (auto* v : {&model.params, &state1, &state2})
    for (Tensor& t : *v) all.push_back(&t);
  return all;
}

EngineSettings::EngineSettings(Engine& e, int lookahead, bool trace)
    : e_(e), policy_(e.policy()), was_tracing_(e.tracing()) {
  try {
    // Lookahead 0 lifts the cap on steps only: the caps on queued memory stay.
    e.set_policy(SyncPolicy::steps(static_cast<std::uint32_t>(lookahead)));
    e.wait_all();
    e.reset_stats();
    // A timeline recorded for a file (TIDE_TRACE) is the file's: left alone.
    if (!was_tracing_) {
      e.take_trace();
      e.set_tracing(trace);
    }
  } catch (...) {
    restore();
    throw;
  }
}

EngineSettings::~EngineSettings() { restore(); }

void EngineSettings::restore() {
  e_.set_tracing(was_tracing_);
  e_.set_policy(policy_);
}

}  // namespace tide::train
