#include "trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>

#include <tide/comm/reducer.h>
#include <tide/core/engine.h>
#include <tide/ops/elementwise.h>
#include <tide/ops/nn.h>
#include <tide/ops/reduction.h>

#include "checkpoint.h"
#include "checkpoint_checks.h"

namespace tide::train {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// A host buffer as a tensor of `dtype` (f32 or f64).
Tensor host_tensor(const std::vector<float>& v, const Shape& shape, DType dtype) {
  if (dtype == DType::f32) return from_vector(v, shape);
  return from_vector(std::vector<double>(v.begin(), v.end()), shape);
}

Tensor host_tensor(const std::vector<double>& v, const Shape& shape, DType dtype) {
  if (dtype == DType::f64) return from_vector(v, shape);
  if (dtype == DType::i32) return from_vector(std::vector<std::int32_t>(v.begin(), v.end()), shape);
  return from_vector(std::vector<float>(v.begin(), v.end()), shape);
}

struct Model {
  std::vector<std::int64_t> widths;  // input, hidden..., classes
  std::vector<Tensor> params;        // w0, b0, w1, b1, ...
  int layers() const { return static_cast<int>(widths.size()) - 1; }
  Tensor& w(int l) { return params[static_cast<std::size_t>(2 * l)]; }
  Tensor& b(int l) { return params[static_cast<std::size_t>(2 * l + 1)]; }
};

/// PyTorch's nn.Linear default: weights and biases uniform in +-1/sqrt(in).
Model make_model(const std::vector<std::int64_t>& widths, DType dtype, Device device, std::uint64_t seed) {
  Model m;
  m.widths = widths;
  for (int l = 0; l + 1 < static_cast<int>(widths.size()); ++l) {
    const std::int64_t in = widths[static_cast<std::size_t>(l)], out = widths[static_cast<std::size_t>(l) + 1];
    const double k = 1.0 / std::sqrt(static_cast<double>(in));
    auto uniform = [&](const Shape& s, std::uint64_t stream) {
      return mul(sub(mul(rand(s, {dtype, device}, {seed * 1000 + stream}), 2.0), 1.0), k);
    };
    m.params.push_back(uniform(Shape{out, in}, 2 * static_cast<std::uint64_t>(l)));
    m.params.push_back(uniform(Shape{out}, 2 * static_cast<std::uint64_t>(l) + 1));
  }
  return m;
}

/// Forward to the logits, keeping what backward needs.
struct Activations {
  std::vector<Tensor> inputs;  // input of layer l
  std::vector<Tensor> pre;     // pre-activation of layer l (before relu)
  Tensor logits;
};

Activations forward(Model& m, const Tensor& x) {
  Activations a;
  Tensor h = x;
  for (int l = 0; l < m.layers(); ++l) {
    a.inputs.push_back(h);
    Tensor z = linear(h, m.w(l), m.b(l));
    a.pre.push_back(z);
    h = l + 1 < m.layers() ? relu(z) : z;
  }
  a.logits = h;
  return a;
}

std::string fingerprint(const TrainConfig& c, const Split& data, int ranks) {
  std::ostringstream os;
  os << "widths=" << data.train.features;
  for (auto h : c.hidden) os << "," << h;
  os << "," << data.train.classes << " dtype=" << dtype_name(c.dtype) << " opt=" << c.optimizer
     << " lr=" << c.lr << " momentum=" << c.momentum << " global_batch=" << c.batch * ranks
     << " seed=" << c.seed << " data=" << content_digest(data.train);
  return os.str();
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// Overlap of [a0, a1) with [b0, b1).
std::int64_t overlap(std::int64_t a0, std::int64_t a1, std::int64_t b0, std::int64_t b1) {
  return std::max<std::int64_t>(0, std::min(a1, b1) - std::max(a0, b0));
}

}  // namespace

void TrainConfig::validate() const {
  auto bad = [](const std::string& what) { throw ValueError("train: " + what); };
  if (hidden.empty()) bad("give at least one hidden width");
  for (auto h : hidden)
    if (h < 1) bad("hidden widths must be >= 1, got " + std::to_string(h));
  if (batch < 1) bad("batch must be >= 1, got " + std::to_string(batch));
  if (epochs < 1) bad("epochs must be >= 1, got " + std::to_string(epochs));
  if (max_steps < 0) bad("max_steps must be >= 0");
  if (optimizer != "sgd" && optimizer != "adam") bad("optimizer must be 'sgd' or 'adam', got '" + optimizer + "'");
  if (!(lr >= 0) || !std::isfinite(lr)) bad("lr must be a finite number >= 0");
  if (!(momentum >= 0 && momentum < 1)) bad("momentum must be in [0, 1)");
  if (!(bucket_mb > 0)) bad("bucket size must be > 0 MiB");
  if (lookahead < 0) bad("lookahead must be >= 0 (0: unbounded)");
  if (log_every < 1) bad("log interval must be >= 1");
  if (checkpoint_every < 0) bad("checkpoint interval must be >= 0");
  if (resume && checkpoint_dir.empty()) bad("resume needs a checkpoint directory");
  if (overwrite && checkpoint_dir.empty()) bad("overwrite needs a checkpoint directory");
  if (resume && overwrite) bad("resume continues the checkpoint and overwrite replaces it: give one, not both");
  if (dtype != DType::f32 && dtype != DType::f64) bad("dtype must be f32 or f64");
}

TrainResult train(Communicator& comm, const Split& data, const TrainConfig& cfg, const Progress& progress) {
  cfg.validate();
  Engine& e = current_engine();
  const int ranks = comm.size(), rank = comm.rank();
  Sampler sampler(data.train.rows, cfg.batch, rank, ranks, cfg.seed);
  if (static_cast<double>(cfg.log_every) * static_cast<double>(cfg.batch * ranks) >= 2147483648.0)
    throw ValueError("train: log interval x global batch must stay below 2^31 (the correct-count is i32)");
  const std::int64_t spe = sampler.steps_per_epoch();
  std::int64_t total = spe * cfg.epochs;
  if (cfg.max_steps > 0) total = std::min(total, cfg.max_steps);

  std::vector<std::int64_t> widths{data.train.features};
  widths.insert(widths.end(), cfg.hidden.begin(), cfg.hidden.end());
  widths.push_back(data.train.classes);
  const Device dev = cfg.device;
  e.check_device(dev);
  // The timeline times host work: on a GPU that is a kernel's launch, not its
  // run, so the overlap figures would mean nothing there.
  const bool trace = cfg.trace && dev.is_cpu();
  // A batch (or a resumed value) from host memory onto the model's device.
  auto to_dev = [dev](const Tensor& host) { return dev.is_cpu() ? host : copy_to(host, dev); };
  Model model = make_model(widths, cfg.dtype, dev, cfg.seed);
  GradientReducer reducer(comm, model.params, {cfg.bucket_mb, ReduceOp::avg});

  // Optimizer state, then the on-device loss and accuracy accumulators.
  const bool adam = cfg.optimizer == "adam";
  std::vector<Tensor> state1, state2;
  for (const Tensor& p : model.params) {
    state1.push_back(zeros(p.shape(), {cfg.dtype, dev}));
    if (adam) state2.push_back(zeros(p.shape(), {cfg.dtype, dev}));
  }
  Tensor loss_sum = zeros(Shape{}, {cfg.dtype, dev});
  Tensor correct_sum = zeros(Shape{}, {DType::i32, dev});

  // The state every rank holds the same copy of, in a fixed order. A
  // checkpoint holds these, then each rank's loss and correct-count sums of
  // the open log interval (one value per rank), then {first step of that
  // interval}. Resumed on as many ranks, each rank takes its own sums back;
  // on another number of ranks, rank 0 takes the totals (the same up to
  // rounding).
  auto everything = [&] {
    std::vector<Tensor*> all;
    for (auto* v : {&model.params, &state1, &state2})
      for (Tensor& t : *v) all.push_back(&t);
    return all;
  };

  // Rank 0 prepares the checkpoint directory and, to resume, reads and
  // checks the checkpoint, then tells the others what it found (every
  // failure is reported through that one broadcast, so no rank is left
  // waiting).
  const std::string fp = rank == 0 ? fingerprint(cfg, data, ranks) : "";
  const std::vector<std::string> names = checkpoint_tensor_names(model.layers(), adam);
  std::int64_t start = 0, log_from = 0;
  if (!cfg.checkpoint_dir.empty()) {
    constexpr double kNone = 0, kOk = 1, kFailed = 2;  // what rank 0 found
    std::vector<double> meta{kNone, 0, 0, 0};
    std::string why;
    std::optional<CheckpointState> ck;
    if (rank == 0) {
      try {
        const StaleTemporaries stale = prepare_checkpoint_dir(cfg.checkpoint_dir);
        if (stale.files > 0 && progress.out)
          *progress.out << "removed " << stale.files << " temporary file(s) ("
                        << fmt("%.1f", static_cast<double>(stale.bytes) / 1e6) << " MB) left in " << cfg.checkpoint_dir
                        << " by an interrupted checkpoint write\n";
        const std::string path = checkpoint_path(cfg.checkpoint_dir);
        if (!cfg.resume && !cfg.overwrite && std::filesystem::exists(path))
          throw std::runtime_error(path + " already holds a checkpoint: continue it with --resume, replace it "
                                   "with --overwrite, or give another --checkpoint directory");
        if (cfg.resume) ck = read_checkpoint(cfg.checkpoint_dir);
        if (ck) {
          ResumeExpectation want{cfg.checkpoint_dir, fp, {}, names, total};
          for (Tensor* t : everything()) want.state_sizes.push_back(t->numel());
          check_resumable(*ck, want);
          meta = {kOk, static_cast<double>(ck->step), ck->tensors.back()[0],
                  static_cast<double>(ck->tensors[everything().size()].size())};
        }
      } catch (const std::exception& ex) {
        why = ex.what();
        meta = {kFailed, 0, 0, 0};
      }
    }
    Tensor m = from_vector(meta, Shape{4});
    comm.broadcast_(m, 0);
    meta = m.to_vector<double>();
    if (meta[0] == kFailed)
      throw std::runtime_error(rank == 0 ? why : "rank 0 could not use the checkpoint directory " + cfg.checkpoint_dir);
    if (meta[0] == kOk) {
      start = static_cast<std::int64_t>(meta[1]);
      log_from = static_cast<std::int64_t>(meta[2]);
      if (rank == 0) {
        auto all = everything();
        for (std::size_t i = 0; i < all.size(); ++i)
          copy_(*all[i], to_dev(host_tensor(ck->tensors[i], all[i]->shape(), all[i]->dtype())));
      }
      // Every rank's own interval sums, from rank 0.
      const auto saved_ranks = static_cast<std::int64_t>(meta[3]);
      std::vector<double> sums(static_cast<std::size_t>(2 * saved_ranks), 0.0);
      if (rank == 0) {
        const auto& l = ck->tensors[everything().size()];
        const auto& c = ck->tensors[everything().size() + 1];
        std::copy(l.begin(), l.end(), sums.begin());
        std::copy(c.begin(), c.end(), sums.begin() + saved_ranks);
      }
      Tensor st = from_vector(sums, Shape{2 * saved_ranks});
      comm.broadcast_(st, 0);
      sums = st.to_vector<double>();
      double my_loss = 0, my_correct = 0;
      if (saved_ranks == ranks) {
        my_loss = sums[static_cast<std::size_t>(rank)];
        my_correct = sums[static_cast<std::size_t>(saved_ranks + rank)];
      } else if (rank == 0) {
        for (std::int64_t r = 0; r < saved_ranks; ++r) {
          my_loss += sums[static_cast<std::size_t>(r)];
          my_correct += sums[static_cast<std::size_t>(saved_ranks + r)];
        }
      }
      loss_sum = to_dev(host_tensor(std::vector<double>{my_loss}, Shape{}, cfg.dtype));
      correct_sum = to_dev(host_tensor(std::vector<double>{my_correct}, Shape{}, DType::i32));
      if (progress.out)
        *progress.out << "resuming from " << checkpoint_path(cfg.checkpoint_dir) << " at step " << start
                      << (start == total ? ": the run is already complete" : "") << "\n";
    } else if (cfg.resume && progress.out) {
      *progress.out << "no checkpoint in " << cfg.checkpoint_dir << ": starting from step 0\n";
    }
  }
  // Every rank starts from rank 0's parameters and state.
  for (Tensor* t : everything()) comm.broadcast_(*t, 0);

  // The policy and tracing are the engine's: give them back however train() ends.
  struct Restore {
    Engine& e;
    SyncPolicy policy;
    ~Restore() {
      e.set_tracing(false);
      e.set_policy(policy);
    }
  } restore{e, e.policy()};
  e.set_policy(cfg.lookahead > 0 ? SyncPolicy::steps(static_cast<std::uint32_t>(cfg.lookahead))
                                 : SyncPolicy::unbounded());
  e.wait_all();
  e.reset_stats();
  e.take_trace();
  e.set_tracing(trace);

  TrainResult res;
  res.first_step = start;
  res.total_steps = total;
  res.global_batch = cfg.batch * ranks;
  res.classes = data.train.classes;
  res.buckets = reducer.describe();
  const std::int64_t warm = std::min<std::int64_t>(10, (total - start) / 4);
  constexpr std::int64_t kTracedSteps = 200;  // after the warm-up
  struct Range {
    std::uint64_t begin, end;
    std::int64_t step;
  };
  std::vector<Range> backward_ranges;
  std::vector<float> xb;
  std::vector<std::int32_t> yb;
  const Shape xshape{cfg.batch, data.train.features};
  double t_warm = now_s(), t_log = now_s();

  for (std::int64_t step = start; step < total; ++step) {
    if (step == start + warm) t_warm = now_s();
    if (trace && step == start + warm + kTracedSteps) {
      // Enough steps for the overlap figures: stop recording (one barrier,
      // so that every traced step is complete).
      e.wait_all();
      e.set_tracing(false);
    }
    {
      comm.check_sync();  // ranks agree on the collectives so far (one small op, no blocker)
      Step minibatch = e.step();
      gather_rows(data.train, sampler.rows_for(step), xb, yb);
      Tensor x = to_dev(host_tensor(xb, xshape, cfg.dtype));
      Tensor y = to_dev(from_vector(yb));

      Activations act = forward(model, x);
      auto [loss, probs] = softmax_cross_entropy(act.logits, y);
      add_(loss_sum, loss);
      add_(correct_sum, sum(eq(argmax(act.logits, 1), y)));

      // Backward, last layer first: each layer's parameter gradients go to
      // the reducer before its input gradient is computed, so a full bucket
      // starts reducing while the layers below still compute.
      const std::uint64_t bwd_begin = e.pushed();
      Tensor d = softmax_cross_entropy_backward(probs, y);
      for (int l = model.layers() - 1; l >= 0; --l) {
        reducer.push_gradient(2 * l, linear_backward_weight(d, act.inputs[static_cast<std::size_t>(l)]));
        reducer.push_gradient(2 * l + 1, linear_backward_bias(d));
        if (l > 0) d = relu_backward(linear_backward_input(d, model.w(l)), act.pre[static_cast<std::size_t>(l) - 1]);
      }
      backward_ranges.push_back({bwd_begin, e.pushed(), step});

      // The optimizer, bucket by bucket: each update waits only for its own
      // bucket's reduction.
      for (const auto& bucket : reducer.buckets())
        for (int i : bucket.params) {
          const auto ui = static_cast<std::size_t>(i);
          Tensor& p = model.params[ui];
          if (adam)
            adam_step_(p, reducer.reduced(i), state1[ui], state2[ui], step + 1, {.lr = cfg.lr});
          else
            sgd_step_(p, reducer.reduced(i), state1[ui], {.lr = cfg.lr, .momentum = cfg.momentum});
        }
      reducer.finish_step();
    }

    const bool last = step + 1 == total;
    if ((step + 1) % cfg.log_every == 0 || last) {
      // The only blockers of the loop: the accumulated loss and accuracy,
      // averaged over ranks, once per interval.
      const double n = static_cast<double>(step + 1 - log_from);
      const double loss_mean = comm.all_reduce(loss_sum, ReduceOp::avg).item<double>() / n;
      const double correct = comm.all_reduce(correct_sum, ReduceOp::sum).item<double>();
      const double t = now_s();
      res.last_loss = loss_mean;
      res.losses.push_back(loss_mean);
      res.last_train_accuracy = correct / (n * static_cast<double>(res.global_batch));
      if (progress.out) {
        std::ostringstream line;
        line << "step " << step + 1 << "/" << total << "  epoch " << step / spe + 1 << "  loss "
             << fmt("%.4f", loss_mean) << "  acc " << fmt("%.1f%%", 100 * res.last_train_accuracy) << "  "
             << fmt("%.0f", n * static_cast<double>(res.global_batch) / (t - t_log)) << " samples/s  stalls "
             << e.stats().stalls;
        if (progress.redraw) *progress.out << "\r" << std::left << std::setw(90) << line.str() << (last ? "\n" : "");
        else *progress.out << line.str() << "\n";
        progress.out->flush();
      }
      // A run that ends between log lines reports the open interval but keeps
      // its sums, so a checkpoint taken now resumes into the same interval.
      if ((step + 1) % cfg.log_every == 0) {
        loss_sum = zeros(Shape{}, {cfg.dtype, dev});
        correct_sum = zeros(Shape{}, {DType::i32, dev});
        log_from = step + 1;
        t_log = t;
      }
    }

    const bool epoch_end = (step + 1) % spe == 0;
    const bool due = cfg.checkpoint_every > 0 ? (step + 1) % cfg.checkpoint_every == 0 : epoch_end;
    if (!cfg.checkpoint_dir.empty() && (due || last)) {
      // Rank 0 writes; then it tells every rank whether that worked, so a
      // failed write ends the run everywhere at once. The other ranks wait
      // under TIDE_COMM_TIMEOUT, which must exceed the time a write takes.
      std::string why;
      Tensor loss_per_rank = comm.all_gather(loss_sum);
      Tensor correct_per_rank = comm.all_gather(correct_sum);
      if (rank == 0) {
        try {
          CheckpointState ck;
          ck.fingerprint = fp;
          ck.step = step + 1;
          for (Tensor* t : everything()) ck.tensors.push_back(t->to_vector<double>());
          ck.tensors.push_back(loss_per_rank.to_vector<double>());
          ck.tensors.push_back(correct_per_rank.to_vector<double>());
          ck.tensors.push_back({static_cast<double>(log_from)});
          if (const std::string nan = first_non_finite(ck.tensors, names); !nan.empty())
            throw std::runtime_error("training diverged: after step " + std::to_string(step + 1) + " there is " + nan +
                                     " (a smaller --lr may help); not writing that over the checkpoint in " +
                                     cfg.checkpoint_dir);
          write_checkpoint(cfg.checkpoint_dir, ck);
        } catch (const std::exception& ex) {
          why = ex.what();
        }
      }
      Tensor ok = from_vector(std::vector<std::int32_t>{why.empty() ? 1 : 0});
      comm.broadcast_(ok, 0);
      if (ok.item<std::int32_t>() != 1)
        throw std::runtime_error(rank == 0 ? why : "rank 0 could not write a checkpoint to " + cfg.checkpoint_dir);
    }
  }
  e.wait_all();
  const double t_end = now_s();
  res.steps_run = total - start;
  const std::int64_t timed = res.steps_run - warm;
  if (timed > 0) {
    res.step_ms = 1e3 * (t_end - t_warm) / static_cast<double>(timed);
    res.samples_per_s = static_cast<double>(timed * res.global_batch) / (t_end - t_warm);
  }
  const Stats st = e.stats();
  res.blockers_per_step = res.steps_run ? static_cast<double>(st.blockers) / static_cast<double>(res.steps_run) : 0;
  res.stalls = st.stalls;
  res.stalled_ms = static_cast<double>(st.stalled_ns) / 1e6;
  res.peak_queued_bytes = st.peak_queued_bytes;

  if (trace) {
    // Per step: the span of its backward on the compute stream, and its
    // bucket ops on the comm stream (both found by push index).
    std::vector<TraceEvent> trace = e.take_trace();
    e.set_tracing(false);
    struct Span {
      std::int64_t bwd0 = INT64_MAX, bwd1 = INT64_MIN, comm_first = INT64_MAX;
      std::vector<std::pair<std::int64_t, std::int64_t>> comm;
    };
    std::vector<Span> spans(backward_ranges.size());
    for (const TraceEvent& ev : trace) {
      auto it = std::upper_bound(backward_ranges.begin(), backward_ranges.end(), ev.push_index,
                                 [](std::uint64_t p, const Range& r) { return p < r.begin; });
      if (it == backward_ranges.begin()) continue;
      --it;
      if (ev.push_index >= it->end) continue;
      Span& s = spans[static_cast<std::size_t>(it - backward_ranges.begin())];
      const auto kind = static_cast<StreamKind>(ev.stream % kStreamKinds);
      if (kind == StreamKind::comm) {
        s.comm.emplace_back(ev.start_ns, ev.end_ns);
        s.comm_first = std::min(s.comm_first, ev.start_ns);
      } else {
        s.bwd0 = std::min(s.bwd0, ev.start_ns);
        s.bwd1 = std::max(s.bwd1, ev.end_ns);
      }
    }
    std::int64_t comm_ns = 0, hidden_ns = 0;
    for (std::size_t i = static_cast<std::size_t>(warm); i < spans.size(); ++i) {
      const Span& s = spans[i];
      if (s.comm.empty() || s.bwd1 < s.bwd0) continue;
      ++res.steps_measured;
      if (s.comm_first < s.bwd1) ++res.steps_first_bucket_overlapped;
      for (auto [a, b] : s.comm) {
        comm_ns += b - a;
        hidden_ns += overlap(a, b, s.bwd0, s.bwd1);
      }
    }
    if (res.steps_measured) {
      res.comm_ms_per_step = static_cast<double>(comm_ns) / 1e6 / static_cast<double>(res.steps_measured);
      res.comm_hidden_fraction = comm_ns ? static_cast<double>(hidden_ns) / static_cast<double>(comm_ns) : 0;
    }
  }

  // Held-out accuracy: each rank scores its share of the test rows.
  const Dataset& test = data.test;
  const std::int64_t lo = test.rows * rank / ranks, hi = test.rows * (rank + 1) / ranks;
  Tensor correct = zeros(Shape{}, {DType::i32, dev});
  constexpr std::int64_t kChunk = 1024;
  for (std::int64_t r0 = lo; r0 < hi; r0 += kChunk) {
    const std::int64_t r1 = std::min(hi, r0 + kChunk);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(r1 - r0));
    for (std::int64_t i = r0; i < r1; ++i) rows[static_cast<std::size_t>(i - r0)] = i;
    gather_rows(test, rows, xb, yb);
    Tensor logits = forward(model, to_dev(host_tensor(xb, Shape{r1 - r0, test.features}, cfg.dtype))).logits;
    add_(correct, sum(eq(argmax(logits, 1), to_dev(from_vector(yb)))));
  }
  const double test_correct = comm.all_reduce(correct, ReduceOp::sum).item<double>();
  res.test_accuracy = test.rows ? test_correct / static_cast<double>(test.rows) : 0;
  for (const Tensor& p : model.params) res.params.push_back(p.to_vector<double>());
  return res;
}

std::string summary(const TrainResult& r, int ranks) {
  std::ostringstream os;
  os << "trained steps " << r.first_step << ".." << r.total_steps << " on " << ranks
     << (ranks == 1 ? " rank" : " ranks") << " (global batch " << r.global_batch << ")\n"
     << "  final loss " << fmt("%.4f", r.last_loss) << ", train accuracy " << fmt("%.1f%%", 100 * r.last_train_accuracy)
     << ", held-out accuracy " << fmt("%.1f%%", 100 * r.test_accuracy) << " (chance "
     << fmt("%.1f%%", 100.0 / std::max(1, r.classes)) << ")\n"
     << "  " << fmt("%.0f", r.samples_per_s) << " samples/s, " << fmt("%.2f", r.step_ms) << " ms per step\n"
     << "  blockers per step " << fmt("%.3f", r.blockers_per_step) << ", runahead stalls " << r.stalls << " ("
     << fmt("%.1f", r.stalled_ms) << " ms), peak queued " << fmt("%.2f", static_cast<double>(r.peak_queued_bytes) / (1 << 20))
     << " MiB\n"
     << "  gradient buckets: " << r.buckets << "\n";
  if (r.comm_ms_per_step >= 0)
    os << "  bucket communication " << fmt("%.3f", r.comm_ms_per_step) << " ms per step, "
       << fmt("%.1f%%", 100 * r.comm_hidden_fraction) << " of it while backward computed; first bucket began "
       << "before backward ended in " << r.steps_first_bucket_overlapped << " of " << r.steps_measured << " steps\n";
  return os.str();
}

}  // namespace tide::train
