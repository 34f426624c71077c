// What the trainer reports: a progress line per log interval, the figures
// of the whole run, and the summary a person reads at the end.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "run.h"

namespace tide::train {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string format_duration(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s / 60 % 60);
  return buf;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TrainResult start_result(Run& run) {
  TrainResult res;
  res.first_step = run.start;
  res.total_steps = run.total;
  res.global_batch = run.cfg.batch * run.cfg.accum_steps * run.ranks;
  res.accum_steps = run.cfg.accum_steps;
  res.classes = run.data.train.classes;
  res.buckets = run.reducer.describe();
  return res;
}

OverlapFigures read_timeline(Run& run, std::int64_t through) {
  OverlapFigures got;
  if (!run.timeline) return got;
  run.meter.feed(run.own_trace ? run.e.take_trace() : run.e.read_trace(run.cursor));
  for (const auto& [step, f] : run.meter.close_through(through)) {
    got += f;
    if (step >= run.measure_from && step < run.measure_to) run.overall += f;
  }
  return got;
}

namespace {

/// `v` as JSON: a number, or null when `known` is false or it is not finite.
std::string num(double v, bool known = true) {
  if (!known || !std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// One JSON line of the interval that ends after `step` (rank 0).
void write_metrics(Run& run, std::int64_t step, const TrainResult& res, double samples_per_s, double interval_s,
                   const OverlapFigures& comm) {
  const Stats now = run.e.stats();
  const Stats& was = run.at_last_log;
  const bool timed = run.timeline && comm.steps > 0;
  std::ostringstream line;
  line << "{\"step\":" << step + 1 << ",\"epoch\":" << step / run.steps_per_epoch + 1
       << ",\"loss\":" << num(res.last_loss) << ",\"accuracy\":" << num(res.last_train_accuracy)
       << ",\"samples_per_s\":" << num(samples_per_s) << ",\"interval_s\":" << num(interval_s)
       << ",\"stalls\":" << now.stalls - was.stalls
       << ",\"stall_ms\":" << num(static_cast<double>(now.stalled_ns - was.stalled_ns) / 1e6)
       << ",\"blockers\":" << now.blockers - was.blockers
       << ",\"blocked_ms\":" << num(static_cast<double>(now.blocked_ns - was.blocked_ns) / 1e6)
       << ",\"queued_bytes\":" << now.queued_bytes << ",\"peak_queued_bytes\":" << now.peak_queued_bytes
       << ",\"comm_steps\":" << comm.steps
       << ",\"comm_ms\":" << num(static_cast<double>(comm.comm_ns) / 1e6, timed)
       << ",\"comm_hidden_ms\":" << num(static_cast<double>(comm.hidden_ns) / 1e6, timed) << ",\"comm_hidden_fraction\":"
       << num(comm.comm_ns ? static_cast<double>(comm.hidden_ns) / static_cast<double>(comm.comm_ns) : 0, timed)
       << "}\n";
  *run.metrics << line.str();
  run.metrics->flush();
  if (!*run.metrics) throw std::runtime_error("--metrics " + run.cfg.metrics_path + ": writing failed");
  run.at_last_log = now;
}

}  // namespace

bool log_due(const Run& run, std::int64_t step) {
  return (step + 1) % run.cfg.log_every == 0 || step + 1 == run.total;
}

void report_progress(Run& run, std::int64_t step, TrainResult& res, double& t_log) {
  const TrainConfig& cfg = run.cfg;
  const bool last = step + 1 == run.total;
  const double n = static_cast<double>(step + 1 - run.log_from);
  // The loss sum has a mean over each micro-batch.
  const double loss_mean = run.comm.all_reduce(run.loss_sum, ReduceOp::avg).item<double>() / (n * cfg.accum_steps);
  const double correct = run.comm.all_reduce(run.correct_sum, ReduceOp::sum).item<double>();
  const double t = now_s();
  res.last_loss = loss_mean;
  res.losses.push_back(loss_mean);
  res.last_train_accuracy = correct / (n * static_cast<double>(res.global_batch));
  // The timeline up to the step before this one: the loss just read needed
  // this step's forward, which needed the last step's update, so every op of
  // the earlier steps' backward has run.
  const OverlapFigures comm = read_timeline(run, step - 1);
  const double samples_per_s = n * static_cast<double>(res.global_batch) / (t - t_log);
  if (run.metrics) write_metrics(run, step, res, samples_per_s, t - t_log, comm);
  if (const Progress& progress = run.progress; progress.out) {
    std::ostringstream line;
    // Most telling first: a narrow terminal cuts the end.
    const double elapsed = t - run.started_s;
    const double left = elapsed / static_cast<double>(step + 1 - run.start) * static_cast<double>(run.total - step - 1);
    line << "step " << step + 1 << "/" << run.total << "  " << format_duration(elapsed)
         << (last ? "" : ", ETA " + format_duration(left)) << "  loss " << fmt("%.4f", loss_mean) << "  acc "
         << fmt("%.1f%%", 100 * res.last_train_accuracy) << "  " << fmt("%.0f", samples_per_s)
         << " samples/s  epoch " << step / run.steps_per_epoch + 1 << "  stalls " << run.e.stats().stalls;
    if (progress.redraw) {
      // Back to the line's start, at most columns - 1 characters (one more
      // would wrap on some terminals), then erase what an earlier, longer
      // line left.
      std::string text = line.str();
      const auto room = static_cast<std::size_t>(std::max(progress.columns - 1, 10));
      if (text.size() > room) text.resize(room);
      *progress.out << "\r" << text << "\x1b[K" << (last ? "\n" : "");
    } else {
      *progress.out << line.str() << "\n";
    }
    progress.out->flush();
  }
  // A run that ends between log lines reports the open interval but keeps
  // its sums, so a checkpoint taken now resumes into the same interval.
  if ((step + 1) % cfg.log_every == 0) {
    run.loss_sum = zeros(Shape{}, {cfg.dtype, run.dev});
    run.correct_sum = zeros(Shape{}, {DType::i32, run.dev});
    run.log_from = step + 1;
    t_log = t;
  }
}

void record_speed(const Run& run, std::int64_t warm, double timed_s, TrainResult& res) {
  res.steps_run = run.total - run.start;
  if (res.steps_run == 0) {
    // A resume of a finished run: no loss, accuracy or speed was measured
    // (NaN, written as null in JSON), rather than zeros that read as results.
    const double none = std::numeric_limits<double>::quiet_NaN();
    res.last_loss = res.last_train_accuracy = res.step_ms = res.samples_per_s = none;
  }
  const std::int64_t timed = res.steps_run - warm;
  if (timed > 0) {
    res.step_ms = 1e3 * timed_s / static_cast<double>(timed);
    res.samples_per_s = static_cast<double>(timed * res.global_batch) / timed_s;
  }
  const Stats st = run.e.stats();
  res.blockers_per_step = res.steps_run ? static_cast<double>(st.blockers) / static_cast<double>(res.steps_run) : 0;
  res.stalls = st.stalls;
  res.stalled_ms = static_cast<double>(st.stalled_ns) / 1e6;
  res.peak_queued_bytes = st.peak_queued_bytes;
}

std::string wrap_lines(const std::string& text, int width) {
  if (width < 20) return text;
  const auto w = static_cast<std::size_t>(width);
  std::string out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find('\n', begin);
    const bool last = end == std::string::npos;
    if (last) end = text.size();
    std::string line = text.substr(begin, end - begin);
    const std::size_t indent = std::min(line.find_first_not_of(' '), w / 2);
    const std::string more(indent + 2, ' ');
    while (line.size() > w) {
      // This piece's own indent (the line's, or the continuation's).
      const std::size_t lead = std::min(line.find_first_not_of(' '), w / 2);
      std::size_t cut = line.rfind(' ', w);
      if (cut == std::string::npos || cut <= lead) cut = w;  // no space after the indent: cut the word
      std::size_t head_end = cut;
      while (head_end > lead && line[head_end - 1] == ' ') --head_end;  // no trailing spaces
      out += line.substr(0, head_end);
      out += '\n';
      std::size_t rest = cut;
      while (rest < line.size() && line[rest] == ' ') ++rest;
      line = more + line.substr(rest);
    }
    out += line;
    if (last) break;
    out += '\n';
    begin = end + 1;
  }
  return out;
}

std::string summary(const TrainResult& r, int ranks) {
  std::ostringstream os;
  const std::string held_out = std::isnan(r.test_accuracy)
                                   ? "  no held-out accuracy: there are no held-out rows\n"
                                   : "  held-out accuracy " + fmt("%.1f%%", 100 * r.test_accuracy) + " (chance " +
                                         fmt("%.1f%%", 100.0 / std::max(1, r.classes)) + ")\n";
  if (r.steps_run == 0) {
    os << "trained no steps: the run was complete already (step " << r.total_steps << " of " << r.total_steps
       << ", from the checkpoint), so there is no final loss or speed to report\n"
       << held_out << "  gradient buckets: " << r.buckets << "\n";
    return os.str();
  }
  os << "trained steps " << r.first_step << ".." << r.total_steps << " on " << ranks
     << (ranks == 1 ? " rank" : " ranks") << " (global batch " << r.global_batch
     << (r.accum_steps > 1 ? ": " + std::to_string(r.accum_steps) + " micro-batches of " +
                                 std::to_string(r.global_batch / r.accum_steps / ranks) + " rows per rank"
                           : std::string())
     << ")\n"
     << "  final loss " << fmt("%.4f", r.last_loss) << ", train accuracy " << fmt("%.1f%%", 100 * r.last_train_accuracy)
     << "\n" << held_out
     << "  " << fmt("%.0f", r.samples_per_s) << " samples/s, " << fmt("%.2f", r.step_ms) << " ms per step\n"
     << "  blockers per step " << fmt("%.3f", r.blockers_per_step) << ", runahead stalls " << r.stalls << " ("
     << fmt("%.1f", r.stalled_ms) << " ms), peak queued " << fmt("%.2f", static_cast<double>(r.peak_queued_bytes) / (1 << 20))
     << " MiB\n"
     << "  gradient buckets: " << r.buckets << "\n";
  if (ranks == 1)
    os << "  bucket communication: none (on one rank there is nothing to reduce)\n";
  else if (r.comm_ms_per_step >= 0)
    os << "  bucket communication " << fmt("%.3f", r.comm_ms_per_step) << " ms per step, "
       << fmt("%.1f%%", 100 * r.comm_hidden_fraction) << " of it ("
       << fmt("%.3f", r.comm_ms_per_step * r.comm_hidden_fraction) << " ms) while "
       << (r.accum_steps > 1 ? "the last micro-batch's backward" : "backward") << " still computed; the first bucket "
       << "began before backward ended in " << r.steps_first_bucket_overlapped << " of " << r.steps_measured
       << " steps\n";
  return os.str();
}

}  // namespace tide::train
