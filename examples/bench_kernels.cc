// Bandwidth of tide's large GPU kernels: elementwise ops over 2^28 f32
// (relu's backward and an SGD step with momentum among them), a row
// broadcast over a 4096 x 4096 f32 matrix, and reductions of that matrix
// along either axis, the bias gradient among them. Each case pushes `--ops` ops, then waits for all of
// them; the time per op over the bytes it must move (each input read once,
// the output written once) gives GB/s. examples/peers/torch_kernels.py does
// the same cases the same way with PyTorch, for the table beside it.
//
//   bench_kernels [--device cuda:0] [--elements 268435456] [--rows 4096]
//                 [--cols 4096] [--ops 20] [--repeats 7] [--cases add,sum1,...]
//                 [--json FILE]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <tide/tide.h>

#include "common/cli.h"
#include "common/json_writer.h"
#include "common/machine.h"
#include "common/timing.h"

namespace {

using tide::examples::at_least;
using tide::examples::median;
using tide::examples::now_ns;

struct Options {
  tide::Device device = tide::cuda(0);
  std::int64_t elements = std::int64_t{1} << 28;
  std::int64_t rows = 4096, cols = 4096;
  int ops = 20, repeats = 7;
  std::vector<std::string> cases;
  std::string json;
};

/// One case: what it does to its inputs and how many bytes it must move.
struct Case {
  std::string name, what;
  double bytes;
  std::function<tide::Tensor()> op;
};

/// An SGD step's parameter, gradient and velocity, made when its case runs.
struct SgdState {
  tide::Tensor p, g, v;
};

std::vector<Case> all_cases(const Options& o, const tide::Tensor& x, const tide::Tensor& y, const tide::Tensor& m,
                            const tide::Tensor& row, SgdState& sgd) {
  const double n = static_cast<double>(o.elements), rc = static_cast<double>(o.rows * o.cols);
  const double r = static_cast<double>(o.rows), c = static_cast<double>(o.cols);
  return {
      {"add", "z = x + y, n f32", 12 * n, [&] { return x + y; }},
      {"add_scalar", "z = x + 1, n f32", 8 * n, [&] { return x + 1; }},
      {"mul", "z = x * y, n f32", 12 * n, [&] { return x * y; }},
      {"fill", "full(n, 0.5): written once", 4 * n,
       [&] { return tide::full({o.elements}, 0.5, {tide::DType::f32, x.device()}); }},
      {"randn", "randn(n): Philox normals, written once", 4 * n,
       [&] { return tide::randn({o.elements}, {tide::DType::f32, x.device()}); }},
      {"relu_grad", "relu_backward(dy = x, y), n f32", 12 * n, [&] { return tide::relu_backward(x, y); }},
      // In place: p, g and v read, p and v written.
      {"sgd", "sgd_step_(p, g, v), momentum 0.9, n f32", 20 * n,
       [&] {
         tide::sgd_step_(sgd.p, sgd.g, sgd.v, {.lr = 1e-3, .momentum = 0.9});
         return sgd.p;
       }},
      {"row_add", "m + row (a broadcast row of cols)", 4 * (2 * rc + c), [&] { return m + row; }},
      {"sum_all", "sum(m), all elements", 4 * rc, [&] { return tide::sum(m); }},
      {"sum1", "sum(m, 1): along rows", 4 * (rc + r), [&] { return tide::sum(m, 1); }},
      {"sum0", "sum(m, 0): along columns", 4 * (rc + c), [&] { return tide::sum(m, 0); }},
      {"mean1", "mean(m, 1)", 4 * (rc + r), [&] { return tide::mean(m, 1); }},
      {"max0", "max(m, 0)", 4 * (rc + c), [&] { return tide::max(m, 0); }},
      {"max1", "max(m, 1)", 4 * (rc + r), [&] { return tide::max(m, 1); }},
      {"argmax1", "argmax(m, 1), i64 indices", 4 * rc + 8 * r, [&] { return tide::argmax(m, 1); }},
      {"bias_grad", "linear_backward_bias(dy = m): column sums", 4 * (rc + c),
       [&] { return tide::linear_backward_bias(m); }},
  };
}

int parse(int argc, char** argv, Options& o) {
  CLI::App app{"Bandwidth of tide's large GPU kernels: elementwise ops and reductions along either axis."};
  app.option_defaults()->always_capture_default();
  std::string device = o.device.str();
  app.add_option("--device", device, "the GPU to measure: cuda:N")->check(tide::examples::device_name());
  app.add_option("--elements", o.elements, "elements of the elementwise cases' f32 inputs")->check(at_least(1));
  app.add_option("--rows", o.rows, "rows of the reductions' f32 matrix")->check(at_least(1));
  app.add_option("--cols", o.cols, "columns of the reductions' f32 matrix")->check(at_least(1));
  app.add_option("--ops", o.ops, "ops per timed run")->check(at_least(1));
  app.add_option("--repeats", o.repeats, "timed runs per case (the median is reported)")->check(at_least(1));
  app.add_option("--cases", o.cases, "cases to run, comma separated (default: all)")->delimiter(',');
  app.add_option("--json", o.json, "also write every number as JSON to this file");
  const int status = tide::examples::parse_command_line(app, argc, argv);
  if (status >= 0) return status;
  o.device = tide::Device::parse(device);
  return -1;
}

struct Result {
  std::string name, what;
  double bytes, ms, gbps;
};

}  // namespace

int main(int argc, char** argv) try {
  const std::string command_line = tide::examples::command_line(argc, argv);
  auto runtime = tide::Runtime::init(argc, argv);
  Options o;
  if (const int status = parse(argc, argv, o); status >= 0) return status;
  if (const int status = tide::examples::gpu_only("bench_kernels", "GPU kernels", o.device); status >= 0) return status;
  runtime->engine().check_device(o.device);
  const tide::TensorOptions f32{tide::DType::f32, o.device};
  const tide::Tensor x = tide::randn({o.elements}, f32), y = tide::randn({o.elements}, f32);
  const tide::Tensor m = tide::randn({o.rows, o.cols}, f32), row = tide::randn({o.cols}, f32);
  SgdState sgd;
  std::vector<Case> cases = all_cases(o, x, y, m, row, sgd);
  if (!o.cases.empty()) {
    std::vector<Case> chosen;
    for (const std::string& name : o.cases) {
      auto it = std::find_if(cases.begin(), cases.end(), [&](const Case& c) { return c.name == name; });
      if (it == cases.end()) {
        std::fprintf(stderr, "bench_kernels: no case '%s'\n", name.c_str());
        return 2;
      }
      chosen.push_back(*it);
    }
    cases = chosen;
  }
  if (std::any_of(cases.begin(), cases.end(), [](const Case& c) { return c.name == "sgd"; }))
    sgd = {tide::randn({o.elements}, f32), tide::randn({o.elements}, f32), tide::zeros({o.elements}, f32)};
  runtime->wait_all();

  std::printf("bench_kernels on %s: %d ops per run, median of %d runs; n = %lld, m = %lld x %lld (f32)\n",
              o.device.str().c_str(), o.ops, o.repeats, static_cast<long long>(o.elements),
              static_cast<long long>(o.rows), static_cast<long long>(o.cols));
  std::vector<Result> results;
  for (const Case& c : cases) {
    auto loop = [&] {
      for (int i = 0; i < o.ops; ++i) tide::Tensor out = c.op();
      runtime->wait_all();
    };
    loop();  // warm-up: module load, the pool's growth
    std::vector<double> ms;
    for (int r = 0; r < o.repeats; ++r) {
      const std::int64_t t0 = now_ns();
      loop();
      ms.push_back(static_cast<double>(now_ns() - t0) * 1e-6 / o.ops);
    }
    const double t = median(ms);
    results.push_back({c.name, c.what, c.bytes, t, c.bytes / (t * 1e-3) * 1e-9});
    std::printf("  %-11s %-44s %9.3f ms  %7.0f GB/s\n", c.name.c_str(), c.what.c_str(), t, results.back().gbps);
  }
  if (!o.json.empty()) {
    std::ofstream f = tide::examples::open_json(o.json);
    tide::examples::JsonWriter j(f);
    tide::examples::begin_benchmark(j, "bench_kernels", command_line);
    j.key("device").value(o.device.str());
    j.key("elements").value(o.elements);
    j.key("rows").value(o.rows);
    j.key("cols").value(o.cols);
    j.key("ops").value(o.ops);
    j.key("repeats").value(o.repeats);
    j.key("cases").begin_object();
    for (const Result& r : results) {
      j.key(r.name).begin_object();
      j.key("what").value(r.what);
      j.key("bytes").value(r.bytes);
      j.key("ms_per_op").value(r.ms);
      j.key("gb_per_s").value(r.gbps);
      j.end_object();
    }
    j.end_object();
    j.end_object();
    f << "\n";
    std::printf("wrote %s\n", o.json.c_str());
  }
  return 0;
} catch (const tide::Error& e) {
  std::fprintf(stderr, "bench_kernels: %s\n", e.what());
  return 2;
}
