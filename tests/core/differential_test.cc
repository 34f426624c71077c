// Invariant 1: a random program gives bitwise the same results on the async
// engine and on the naive engine, for any number of streams and devices.
// The program's choices depend only on its seed, never on values, so both
// engines run the very same program.
#include <cstring>
#include <random>
#include <vector>

#include <tide/ops/creation.h>
#include <tide/ops/elementwise.h>
#include <tide/ops/reduction.h>

#include "../gpu_test_util.h"
#include "test_util.h"

namespace tide::test {
namespace {

struct Program {
  std::uint64_t seed;
  int devices;
  int ops;
  int gpus = 0;  // GPUs cuda:0.. beside the CPU devices
};

std::vector<std::vector<float>> run(const Program& p, EngineKind kind) {
  EngineFixture e(kind, p.devices, {}, p.gpus);
  std::mt19937_64 rng(p.seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  auto device = [&] {
    const int i = pick(p.devices + p.gpus);
    return i < p.devices ? cpu(i) : cuda(i - p.devices);
  };
  const Shape shape{4, 8};

  std::vector<Tensor> pool;
  for (int i = 0; i < 24; ++i)
    pool.push_back(rand(shape, {DType::f32, device()}, {.seed = p.seed * 100 + static_cast<std::uint64_t>(i)}));
  std::vector<std::vector<float>> results;
  std::vector<Tensor> reductions;
  auto on = [&](const Tensor& t, Device d) { return t.device() == d ? t : copy_to(t, d); };

  for (int n = 0; n < p.ops; ++n) {
    StreamScope stream(static_cast<StreamKind>(pick(kStreamKinds)), *e);
    Tensor& dst = pool[static_cast<std::size_t>(pick(24))];
    const Tensor& a = pool[static_cast<std::size_t>(pick(24))];
    const Tensor& b = pool[static_cast<std::size_t>(pick(24))];
    switch (pick(10)) {
      case 0: dst = add(a, on(b, a.device())); break;
      case 1: dst = mul(a, on(b, a.device())); break;
      case 2: dst = sub(a, on(b, a.device())) * 0.5 + 0.25; break;
      case 3: { Tensor src = on(a, dst.device()); add_(dst, src); mul_(dst, 0.5); break; }
      case 4: { Tensor d = dst; copy_(d, a); break; }  // may cross devices
      case 5: dst = copy_to(a, device()); break;
      case 6: dst = pick(2) ? relu(a) : neg(a); break;
      case 7: reductions.push_back(sum(a, pick(2))); break;
      case 8: dst = div(a, add(on(b, a.device()) * on(b, a.device()), 1.0)); break;
      case 9: if (pick(8) == 0) results.push_back(a.to_vector<float>()); break;  // a blocker mid-program
    }
  }
  for (const auto& t : pool) results.push_back(t.to_vector<float>());
  for (const auto& t : reductions) results.push_back(t.to_vector<float>());
  e->wait_all();
  return results;
}

class Differential : public ::testing::TestWithParam<Program> {};

TEST_P(Differential, AsyncMatchesNaiveBitwise) {
  const Program p = GetParam();
  if (p.gpus > 0) TIDE_REQUIRE_GPU();
  auto expected = run(p, EngineKind::naive);
  auto got = run(p, EngineKind::async);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), expected[i].size()) << "result " << i;
    ASSERT_EQ(std::memcmp(got[i].data(), expected[i].data(), got[i].size() * sizeof(float)), 0)
        << "result " << i << " differs between the async and naive engines";
  }
}

INSTANTIATE_TEST_SUITE_P(
    RandomPrograms, Differential,
    ::testing::Values(Program{1, 1, 3000}, Program{2, 1, 3000}, Program{3, 2, 3000},
                      Program{4, 2, 3000}, Program{5, 4, 3000}, Program{6, 4, 3000},
                      // Each op on cuda:0 or a CPU device: GPU streams, events and copies.
                      Program{7, 1, 3000, 1}, Program{8, 2, 3000, 1}),
    [](const auto& info) {
      return "seed" + std::to_string(info.param.seed) + "_devices" + std::to_string(info.param.devices) +
             (info.param.gpus ? "_gpus" + std::to_string(info.param.gpus) : "");
    });

}  // namespace
}  // namespace tide::test
