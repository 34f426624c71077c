// libtorch_ops: bench_ops's work in libtorch (PyTorch's C++ library) on the
// CPU, one thread, the peer tide's elementwise and random-matrix figures are
// compared with: N x `y = x + 1` (f32, a new output each time) at each size,
// microseconds per op; then 10 x randn(size, size) and 10 x (randn + matmul),
// seconds per 10. Medians over --runs; JSON with --json.
//
// Built on its own (libtorch is not a dependency of tide), from Debian's
// libtorch-dev (scripts/setup.sh --peers):
//   cmake -S examples/peers -B build-peers && cmake --build build-peers
//   build-peers/libtorch_ops [--sizes 2,1000,100000] [--ops 10000] [--runs 11]
//                            [--matmul-size 1000] [--json FILE]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

long whole(const std::string& what, const std::string& s, long min) {
  std::size_t used = 0;
  long v = 0;
  try {
    v = std::stol(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || v < min)
    throw std::invalid_argument(what + " takes a whole number of at least " + std::to_string(min) + ", got '" + s + "'");
  return v;
}

double per_op_us(const torch::Tensor& x, int ops) {
  torch::Tensor y;
  const double t0 = now_s();
  for (int i = 0; i < ops; ++i) y = x + 1;
  const double t1 = now_s();
  if (!torch::equal(y, torch::full_like(x, 2))) throw std::runtime_error("wrong result");
  return (t1 - t0) / ops * 1e6;
}

double random_matrices(long n, bool with_matmul) {
  const double t0 = now_s();
  for (int i = 0; i < 10; ++i) {
    torch::Tensor a = torch::randn({n, n});
    if (with_matmul) torch::Tensor b = torch::matmul(a, a);
  }
  return now_s() - t0;
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<long> sizes{2, 1000, 100000};
  long ops = 10000, runs = 11, matmul_size = 1000;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf("usage: libtorch_ops [--sizes 2,1000,100000] [--ops 10000] [--runs 11] [--matmul-size 1000] "
                  "[--json FILE]\n");
      return 0;
    }
    if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--sizes") {
      sizes.clear();
      std::size_t start = 0;
      for (;;) {
        const std::size_t comma = v.find(',', start);
        sizes.push_back(whole("--sizes", v.substr(start, comma - start), 1));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (a == "--ops") {
      ops = whole(a, v, 1);
    } else if (a == "--runs") {
      runs = whole(a, v, 1);
    } else if (a == "--matmul-size") {
      matmul_size = whole(a, v, 0);
    } else if (a == "--json") {
      json = v;
    } else {
      throw std::invalid_argument("unknown option " + a);
    }
  }
  at::set_num_threads(1);
  torch::manual_seed(1);

  std::printf("# libtorch %s, 1 thread: %ld x y = x + 1 (f32) per run, %ld runs, medians; us per op\n",
              TORCH_VERSION, ops, runs);
  std::printf("#   elements |  libtorch us/op\n");
  std::vector<double> per_op;
  for (long n : sizes) {
    torch::Tensor x = torch::ones({n});
    per_op_us(x, static_cast<int>(std::min<long>(ops, 100)));  // warm-up
    std::vector<double> us;
    for (long r = 0; r < runs; ++r) us.push_back(per_op_us(x, static_cast<int>(ops)));
    per_op.push_back(median(us));
    std::printf("%12ld | %15.3f\n", n, per_op.back());
  }
  double randn_s = 0, randn_matmul_s = 0;
  if (matmul_size > 0) {
    std::printf("# 10 x randn(%ld, %ld) [+ matmul(a, a)], f32; s per 10 (median)\n", matmul_size, matmul_size);
    for (bool mm : {false, true}) {
      random_matrices(matmul_size, mm);  // warm-up
      std::vector<double> s;
      for (long r = 0; r < runs; ++r) s.push_back(random_matrices(matmul_size, mm));
      (mm ? randn_matmul_s : randn_s) = median(s);
      std::printf("%13s | %12.4f\n", mm ? "randn+matmul" : "randn", median(s));
    }
  }
  if (!json.empty()) {
    std::ofstream f(json);
    if (!f) throw std::runtime_error("cannot write " + json);
    f << "{\n  \"benchmark\": \"peers/libtorch_ops\",\n  \"libtorch\": \"" << TORCH_VERSION << "\",\n"
      << "  \"threads\": 1, \"ops\": " << ops << ", \"runs\": " << runs << ",\n  \"rows\": [";
    for (std::size_t i = 0; i < sizes.size(); ++i)
      f << (i ? ", " : "") << "{\"elements\": " << sizes[i] << ", \"libtorch_us_per_op\": " << per_op[i] << "}";
    f << "]";
    if (matmul_size > 0)
      f << ",\n  \"matmul_size\": " << matmul_size << ",\n  \"random\": [{\"work\": \"randn\", \"libtorch_s\": "
        << randn_s << "}, {\"work\": \"randn+matmul\", \"libtorch_s\": " << randn_matmul_s << "}]";
    f << "\n}\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "libtorch_ops: %s\n", e.what());
  return 1;
}
