// Data-parallel training of an MLP on tide: every rank runs this program
// (mpirun -np R, or launch/tiderun), trains on its share of each global batch,
// and the gradients are averaged across ranks in buckets that overlap
// backward. With no --data it learns a generated task; --data DIR reads MNIST.
//
//   mpirun -np 2 build/examples/train_data_parallel --epochs 3
//   build/examples/train_data_parallel --data ~/mnist --optimizer adam --lr 1e-3
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <tide/tide.h>

#include "common/cli.h"
#include "common/json_writer.h"
#include "common/machine.h"
#include "train/options.h"
#include "train/trainer.h"

extern "C" void openblas_set_num_threads(int);  // OpenBLAS, the BLAS tide builds with

namespace {

/// The terminal's width: stdout's window size, else $COLUMNS, else 80.
int terminal_columns() {
  winsize w{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  if (const char* c = std::getenv("COLUMNS"); c && *c) {
    const long v = std::strtol(c, nullptr, 10);
    if (v > 0 && v < 10000) return static_cast<int>(v);
  }
  return 80;
}

using tide::examples::JsonWriter;
using tide::examples::at_least;
using tide::examples::number_above;
using tide::examples::unsigned_whole;
using namespace tide::train;

/// A digest of the final parameters, to compare two runs exactly: 64-bit
/// FNV-1a over every parameter's values as f64 bytes, in order, each tensor
/// preceded by its length. Equal digests: the same parameters, bit for bit.
std::string params_digest(const std::vector<std::vector<double>>& params) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      h ^= static_cast<const unsigned char*>(p)[i];
      h *= 1099511628211ull;
    }
  };
  for (const auto& t : params) {
    const std::uint64_t n = t.size();
    mix(&n, sizeof n);
    mix(t.data(), t.size() * sizeof(double));
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void write_json(const std::string& path, const TrainConfig& c, const TrainResult& r, int ranks,
                const std::string& data, const std::string& command) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  JsonWriter w(out);
  w.begin_object();
  w.field("benchmark", "train_data_parallel").field("command", command);
  tide::examples::write_machine(w);
  w.field("ranks", ranks).field("data", data);
  w.key("config").begin_object();
  w.key("hidden").begin_array();
  for (auto h : c.hidden) w.value(h);
  w.end_array();
  w.field("batch_per_rank", c.batch).field("global_batch", r.global_batch).field("optimizer", c.optimizer)
      .field("lr", c.lr).field("accum_steps", c.accum_steps).field("bucket_mb", c.bucket_mb)
      .field("first_bucket_mb", c.first_bucket_mb).field("lookahead", c.lookahead)
      .field("dtype", tide::dtype_name(c.dtype)).field("device", c.device.str()).field("steps", r.total_steps);
  w.end_object();
  w.key("result").begin_object();
  w.field("first_step", r.first_step).field("steps_run", r.steps_run).field("final_loss", r.last_loss)
      .field("train_accuracy", r.last_train_accuracy).field("test_accuracy", r.test_accuracy)
      .field("step_ms", r.step_ms).field("samples_per_s", r.samples_per_s)
      .field("blockers_per_step", r.blockers_per_step).field("stalls", r.stalls).field("stalled_ms", r.stalled_ms)
      .field("peak_queued_bytes", r.peak_queued_bytes).field("buckets", r.buckets)
      .field("comm_ms_per_step", r.comm_ms_per_step).field("comm_hidden_fraction", r.comm_hidden_fraction)
      .field("steps_first_bucket_overlapped", r.steps_first_bucket_overlapped)
      .field("steps_measured", r.steps_measured).field("params_digest", params_digest(r.params));
  w.end_object();
  w.end_object();
  out << "\n";
}

/// --device: "cpu", "cuda" (this rank's GPU, Runtime::device()) or "auto"
/// (the GPU when every rank has one, shared or its own, and NCCL is built,
/// else the CPU). The ranks decide together (a small all-reduce), since their
/// collectives must pair up. Sets `why` when the GPU cannot be used.
tide::Device pick_device(tide::Runtime& rt, const std::string& mode, std::string& why) {
  if (mode == "cpu") return tide::cpu(0);
  if (!rt.device().is_cuda()) why = "no GPU in this engine";
  else if (!tide::Communicator::nccl_built()) why = "this build has no NCCL";
  tide::Tensor ok = tide::from_vector(std::vector<std::int32_t>{why.empty() ? 1 : 0});
  rt.world().all_reduce_(ok, tide::ReduceOp::min);
  if (ok.item<std::int32_t>() == 0 && why.empty()) why = "another rank cannot use a GPU";
  if (why.empty()) return rt.device();
  if (mode == "cuda") throw tide::DeviceError("--device cuda: " + why);
  return tide::cpu(0);
}

/// Whether any two ranks of the job share a GPU (decided together, one
/// small all-reduce). Such ranks take turns on the GPU, and a collective
/// waits for the other context's turn, so each costs milliseconds: one
/// bucket per step then beats the small first bucket, whose overlap the
/// turns take away.
bool gpus_shared(tide::Runtime& rt, tide::Device device) {
  if (!device.is_cuda()) return false;
  tide::Tensor any = tide::from_vector(std::vector<std::int32_t>{rt.gpu_sharing().node_shares() ? 1 : 0});
  rt.world().all_reduce_(any, tide::ReduceOp::max);
  return any.item<std::int32_t>() != 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<tide::Runtime> rt;
  try {
    rt = tide::Runtime::init(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "train_data_parallel: " << e.what() << "\n";
    return 2;
  }
  CLI::App app{"tide: data-parallel MLP training (run it under mpirun for several ranks)"};
  TrainConfig c;
  std::string data_dir, json, dtype = "f32";
  std::int64_t train_rows = 24576, test_rows = 4096, features = 64;
  int classes = 10, blas_threads = 1;
  bool no_trace = false;
  std::string progress_mode = "auto", device = "auto";
  app.add_option("--data", data_dir, "MNIST directory (IDX files); default: a generated task")
      ->check(CLI::ExistingDirectory);
  std::string hidden = "512,512";
  app.add_option("--hidden", hidden, "hidden layer widths, comma-separated")->capture_default_str();
  app.add_option("--batch", c.batch, "rows per rank per micro-batch (a step is --accum-steps of them)")
      ->capture_default_str()->check(at_least(1));
  app.add_option("--accum-steps", c.accum_steps,
                 "micro-batches per optimizer step (gradient accumulation): their gradients are summed locally "
                 "and reduced across ranks once, in the last one's backward; a step then computes what a batch "
                 "of accum-steps x batch rows would, and steps, --max-steps, --log-every, --checkpoint-every and "
                 "samples/s count optimizer steps")
      ->capture_default_str()->check(at_least(1));
  app.add_option("--epochs", c.epochs,
                 "passes over the training set (default: 2, or as many as --max-steps needs; given with --max-steps, "
                 "the run ends at whichever comes first)")
      ->check(at_least(1));
  app.add_option("--max-steps", c.max_steps, "stop after this many global (optimizer) steps (0: all epochs)")
      ->capture_default_str()->check(at_least(0));
  app.add_option("--lr", c.lr, "learning rate")->capture_default_str()->check(number_above(0, true));
  app.add_option("--optimizer", c.optimizer, "sgd (with momentum) or adam")
      ->capture_default_str()->check(CLI::IsMember({"sgd", "adam"}));
  app.add_option("--momentum", c.momentum, "SGD momentum")->capture_default_str()->check(CLI::Range(0.0, 0.999999));
  app.add_option("--bucket-mb", c.bucket_mb, "gradient bucket cap in MiB")->capture_default_str()->check(number_above(0, false));
  CLI::Option* first_bucket =
      app.add_option("--first-bucket-mb", c.first_bucket_mb,
                     "cap in MiB of the first gradient bucket (the last layers', whose gradients come first), so "
                     "that communication starts early in backward; at most --bucket-mb; 0: the same cap as the "
                     "others (the default when ranks share a GPU)")
          ->capture_default_str()->check(number_above(0, true));
  app.add_option("--lookahead", c.lookahead, "steps the frontend may run ahead (0: no cap on steps; the caps on queued memory stay)")
      ->capture_default_str()->check(at_least(0));
  app.add_option("--log-every", c.log_every, "steps between progress lines")->capture_default_str()->check(at_least(1));
  app.add_option("--checkpoint", c.checkpoint_dir, "directory for checkpoints (rank 0 writes): checkpoint.safetensors (the model, in its dtype, "
                 "under nn.Sequential's names 0.weight, 0.bias, 2.weight, ...) and optimizer.safetensors");
  app.add_option("--checkpoint-every", c.checkpoint_every, "steps between checkpoints (0: every epoch)")
      ->capture_default_str()->check(at_least(0));
  app.add_flag("--resume", c.resume, "continue from the checkpoint in --checkpoint, if there is one (a changed --lr, --batch, --accum-steps, --seed or "
               "--dtype is continued with a warning; another model, data or optimizer is refused)");
  app.add_flag("--overwrite", c.overwrite,
               "start over even though --checkpoint holds a checkpoint, replacing it at the first write "
               "(without --resume or --overwrite, an existing checkpoint stops the run)");
  app.add_option("--dtype", dtype, "f32 or f64")->capture_default_str()->check(CLI::IsMember({"f32", "f64"}));
  app.add_option("--seed", c.seed, "weights and data order")->capture_default_str()->check(unsigned_whole());
  app.add_option("--train-rows", train_rows, "generated task: training rows")->capture_default_str()->check(at_least(1));
  app.add_option("--test-rows", test_rows, "generated task: held-out rows")->capture_default_str()->check(at_least(0));
  app.add_option("--features", features, "generated task: input width")->capture_default_str()->check(at_least(1));
  app.add_option("--classes", classes, "generated task: classes")->capture_default_str()->check(CLI::Range(2, 1000));
  app.add_option("--blas-threads", blas_threads, "OpenBLAS threads per rank")->capture_default_str()->check(at_least(1));
  app.add_option("--progress", progress_mode,
                 "lines, redraw (one line rewritten in place), or auto: redraw on a terminal, "
                 "lines otherwise and under mpirun (which hands ranks a terminal of its own)")
      ->capture_default_str()->check(CLI::IsMember({"auto", "lines", "redraw"}));
  app.add_flag("--no-trace", no_trace, "do not read the timeline (no overlap figures)");
  std::string trace_dir;
  app.add_option("--trace", trace_dir,
                 "every rank writes its timeline to DIR/trace.rank<R>.json (as TIDE_TRACE=DIR); "
                 "launch/tide-trace merge DIR puts them in one file");
  app.add_option("--metrics", c.metrics_path,
                 "a JSON line per log interval here (rank 0): loss, accuracy, samples/s, stalls, blockers, "
                 "queued bytes, bucket communication and the part hidden under backward");
  app.add_option("--json", json, "write the results as JSON here (rank 0)");
  app.add_option("--device", device,
                 "cpu, cuda (this rank's GPU: local rank % GPUs) or auto (the GPU when every rank has one, its own or "
                 "shared, and NCCL is built; else the CPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  if (const int status = tide::examples::parse_command_line(app, argc, argv, rt->rank() == 0); status >= 0)
    return status;
  try {
    c.hidden = parse_widths(hidden);
  } catch (const std::invalid_argument& e) {
    if (rt->rank() == 0) std::cerr << "--hidden: " << e.what() << "\n";
    return 2;
  }
  c.dtype = dtype == "f64" ? tide::DType::f64 : tide::DType::f32;
  c.trace = !no_trace;
  if ((c.resume || c.overwrite) && c.checkpoint_dir.empty()) {
    if (rt->rank() == 0) std::cerr << (c.resume ? "--resume" : "--overwrite") << " needs --checkpoint DIR\n";
    return 2;
  }
  if (c.resume && c.overwrite) {
    if (rt->rank() == 0) std::cerr << "give --resume (continue the checkpoint) or --overwrite (replace it), not both\n";
    return 2;
  }
  openblas_set_num_threads(blas_threads);
  if (!trace_dir.empty()) {
    try {
      rt->start_trace(trace_dir);
    } catch (const tide::Error& e) {
      if (rt->rank() == 0) std::cerr << "--trace: " << e.what() << "\n";
      return 2;
    }
  }

  try {
    const Split data = data_dir.empty() ? make_generated(train_rows, test_rows, features, classes, 1234)
                                        : load_mnist(data_dir);
    std::string why_cpu;
    c.device = pick_device(*rt, device, why_cpu);
    if (first_bucket->count() == 0 && gpus_shared(*rt, c.device)) c.first_bucket_mb = 0;
    // On a terminal the header and summary are broken to its width, so no
    // line wraps; in a file or a pipe each stays one line, for grep.
    const bool terminal = ::isatty(STDOUT_FILENO) && !tide::launched_by_mpi();
    const int wrap_width = terminal ? terminal_columns() - 1 : 0;
    rt->log(wrap_lines("tide train_data_parallel: " + std::to_string(rt->size()) +
                           (rt->size() == 1 ? " rank, " : " ranks, ") + tide::engine_kind_name(rt->engine().kind()) +
                           " engine, model on " + (c.device.is_cuda() ? "the GPU (cuda:local rank)" : "cpu:0") +
                           (why_cpu.empty() || device == "cpu" ? "" : " (" + why_cpu + ")") +
                           (c.device.is_cuda() && rt->gpu_shared() ? " (" + rt->gpu_sharing_note() + ")" : "") + "; " +
                           data.description,
                       wrap_width));
    Progress progress;
    if (rt->rank() == 0) {
      progress.out = &std::cout;
      progress.redraw = progress_mode == "redraw" || (progress_mode == "auto" && terminal);
      progress.columns = terminal_columns();
    }
    TrainResult r = train(rt->world(), data, c, progress);
    rt->log(wrap_lines(summary(r, rt->size()), wrap_width));
    if (!json.empty() && rt->rank() == 0)
      write_json(json, c, r, rt->size(), data.description, tide::examples::command_line(argc, argv));
  } catch (const std::exception& e) {
    rt->fail(1, std::string("train_data_parallel: ") + e.what());
  }
  return 0;
}
