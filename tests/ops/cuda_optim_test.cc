// The multi-tensor optimizer steps on a CUDA device (one launch per op,
// each block on one parameter) against the single-tensor steps there and on
// the CPU: the same bits, for parameters of many sizes in one launch (empty,
// one element, several blocks, past the grid's cap) and lists longer than
// one op takes.
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_nn_test_util.h"
#if TIDE_HAVE_CUDA  // the multi-tensor launch count
#include "../../ops/src/cuda/optim_kernels.h"
#endif

namespace tide::testing {
namespace {

using CudaOptimTest = CudaOpsTest;
TIDE_CUDA_OPS_TEST_SUITE(CudaOptimTest);

/// Parameter sizes: 22 of them, 18 f32 (ops of 16 and 2) and 4 f64 (one
/// op). With `past_grid` the seventh is larger than one grid covers at once
/// (65,536 blocks of 256 threads), so its blocks stride (the SGD test; the
/// Adam test keeps the memory checker's run short).
std::vector<std::int64_t> sizes(bool past_grid) {
  const std::int64_t seventh = past_grid ? (std::int64_t{1} << 24) + 3 : 4099;
  std::vector<std::int64_t> s{1000, 0, 1, 257, (std::int64_t{1} << 20) + 7, 31, seventh};
  for (std::int64_t k = 0; s.size() < 22; ++k) s.push_back(100 + 37 * k);
  return s;
}

DType dtype_of(std::size_t k) { return k % 5 == 2 ? DType::f64 : DType::f32; }

Tensor random_tensor(std::int64_t n, DType dt, std::uint32_t seed) {
  if (dt == DType::f64) return from_vector(random_values<double>(idx(n), seed));
  return from_vector(random_values<float>(idx(n), seed));
}

struct Lists {
  std::vector<Tensor> p, s1, s2;
};

/// The same start on `device`.
Lists start(Device device, bool past_grid) {
  Lists l;
  const std::vector<std::int64_t> n = sizes(past_grid);
  for (std::size_t k = 0; k < n.size(); ++k) {
    l.p.push_back(copy_to(random_tensor(n[k], dtype_of(k), static_cast<std::uint32_t>(700 + k)), device));
    l.s1.push_back(zeros({n[k]}, {dtype_of(k), device}));
    l.s2.push_back(zeros({n[k]}, {dtype_of(k), device}));
  }
  return l;
}

std::vector<Tensor> grads(int step, Device device, bool past_grid) {
  std::vector<Tensor> g;
  const std::vector<std::int64_t> n = sizes(past_grid);
  for (std::size_t k = 0; k < n.size(); ++k)
    g.push_back(copy_to(random_tensor(n[k], dtype_of(k), static_cast<std::uint32_t>(800 + 40 * step + k)), device));
  return g;
}

TEST_P(CudaOptimTest, SgdOverAListInOneLaunchGivesTheBitsOfOneAtATimeAndOfTheCpu) {
  TIDE_REQUIRE_GPU();
  start_engine();
  const SgdOptions o{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3};
  Lists many = start(cuda(0), true), one = start(cuda(0), true), host = start(cpu(0), true);
  for (int step = 0; step < 3; ++step) {
    const std::vector<Tensor> g = grads(step, cuda(0), true), hg = grads(step, cpu(0), true);
    const std::uint64_t before = eng_->stats().ops_pushed;
#if TIDE_HAVE_CUDA
    const std::uint64_t launches = cuda_kernels::optimizer_many_launches();
#endif
    sgd_step_(many.p, g, many.s1, o);
    EXPECT_EQ(eng_->stats().ops_pushed - before, 3u) << "18 f32 parameters in ops of 16 and 2, 4 f64 ones in one";
#if TIDE_HAVE_CUDA
    eng_->wait_all();
    EXPECT_EQ(cuda_kernels::optimizer_many_launches() - launches, 3u) << "one launch per op";
#endif
    for (std::size_t k = 0; k < g.size(); ++k) sgd_step_(one.p[k], g[k], one.s1[k], o);
    sgd_step_(host.p, hg, host.s1, o);
  }
  expect_same_bits(many.p, one.p, "params (one at a time)");
  expect_same_bits(many.s1, one.s1, "velocities (one at a time)");
  expect_same_bits(many.p, host.p, "params (cpu)");
  expect_same_bits(many.s1, host.s1, "velocities (cpu)");
}

TEST_P(CudaOptimTest, AdamOverAListInOneLaunchGivesTheBitsOfOneAtATimeAndOfTheCpu) {
  TIDE_REQUIRE_GPU();
  start_engine();
  AdamOptions o;
  o.lr = 1e-2;
  o.weight_decay = 1e-2;
  Lists many = start(cuda(0), false), one = start(cuda(0), false), host = start(cpu(0), false);
  for (int step = 1; step <= 3; ++step) {
    const std::vector<Tensor> g = grads(step, cuda(0), false), hg = grads(step, cpu(0), false);
    adam_step_(many.p, g, many.s1, many.s2, step, o);
    for (std::size_t k = 0; k < g.size(); ++k) adam_step_(one.p[k], g[k], one.s1[k], one.s2[k], step, o);
    adam_step_(host.p, hg, host.s1, host.s2, step, o);
  }
  expect_same_bits(many.p, one.p, "params (one at a time)");
  expect_same_bits(many.s1, one.s1, "m (one at a time)");
  expect_same_bits(many.s2, one.s2, "v (one at a time)");
  expect_same_bits(many.p, host.p, "params (cpu)");
  expect_same_bits(many.s1, host.s1, "m (cpu)");
  expect_same_bits(many.s2, host.s2, "v (cpu)");
}

TEST_P(CudaOptimTest, AGradientThatIsItsParameterAndViewsOfOneBuffer) {
  TIDE_REQUIRE_GPU();
  start_engine();
  Tensor flat = from_vector(std::vector<double>{1, -2, 3, 4, 5, 6});
  Tensor gflat = copy_to(flat, cuda(0));
  std::vector<Tensor> p{slice(flat, 0, 0, 2), slice(flat, 0, 2, 6)}, gp{slice(gflat, 0, 0, 2), slice(gflat, 0, 2, 6)};
  std::vector<Tensor> v{zeros({2}, {DType::f64}), zeros({4}, {DType::f64})};
  std::vector<Tensor> gv{zeros({2}, {DType::f64, cuda(0)}), zeros({4}, {DType::f64, cuda(0)})};
  sgd_step_(p, std::vector<Tensor>{p[0], ones({4}, {DType::f64})}, v, {.lr = 0.5});
  sgd_step_(gp, std::vector<Tensor>{gp[0], ones({4}, {DType::f64, cuda(0)})}, gv, {.lr = 0.5});
  EXPECT_EQ(gflat.to_vector<double>(), flat.to_vector<double>());
  EXPECT_EQ(flat.to_vector<double>(), (std::vector<double>{0.5, -1.0, 2.5, 3.5, 4.5, 5.5}));
}

/// Parameters, gradients and states at offsets of 0 to 3 elements from a
/// 16-byte boundary, each array at its own (slices of f32 buffers), and of
/// sizes around the pack's width: the packed path where all of a
/// parameter's arrays are aligned (whole packs and a tail, a tail alone),
/// the element one where any is not (the parameter, the gradient, either
/// state alone). Each gives the CPU's bits, over a list and one at a time.
TEST_P(CudaOptimTest, StepsOnUnalignedViewsGiveTheBitsOfTheCpu) {
  TIDE_REQUIRE_GPU();
  start_engine();
  struct Layout {
    std::int64_t len, at[4];  // offsets of the parameter, gradient, first and second state
  };
  const std::vector<Layout> layouts{{1003, {0, 0, 0, 0}}, {3, {0, 0, 0, 0}}, {5, {0, 0, 0, 0}},
                                    {8, {0, 0, 0, 0}},    {5, {1, 1, 1, 1}}, {9, {0, 1, 0, 0}},
                                    {7, {0, 0, 2, 0}},    {6, {0, 0, 0, 3}}, {4, {3, 2, 1, 0}},
                                    {1, {2, 2, 2, 2}}};
  // Array `which` (0: parameters, 1: gradients, 2 and 3: states) of every layout.
  auto views = [&](int which, Device device, std::uint32_t seed, bool random) {
    std::vector<Tensor> out;
    for (std::size_t k = 0; k < layouts.size(); ++k) {
      const std::int64_t at = layouts[k].at[which], n = layouts[k].len + at;
      Tensor whole = random ? from_vector(random_values<float>(idx(n), seed + static_cast<std::uint32_t>(k)))
                            : zeros({n}, {DType::f32});
      out.push_back(slice(copy_to(whole, device), 0, at, n));
    }
    return out;
  };
  for (bool adam : {false, true}) {
    SCOPED_TRACE(adam ? "adam" : "sgd");
    std::vector<Tensor> many = views(0, cuda(0), 1, true), host = views(0, cpu(0), 1, true);
    std::vector<Tensor> one = views(0, cuda(0), 1, true);
    std::vector<Tensor> m1 = views(2, cuda(0), 0, false), m2 = views(3, cuda(0), 0, false);
    std::vector<Tensor> o1 = views(2, cuda(0), 0, false), o2 = views(3, cuda(0), 0, false);
    std::vector<Tensor> h1 = views(2, cpu(0), 0, false), h2 = views(3, cpu(0), 0, false);
    for (int step = 1; step <= 2; ++step) {
      const std::vector<Tensor> g = views(1, cuda(0), 50 + 20 * static_cast<std::uint32_t>(step), true);
      const std::vector<Tensor> hg = views(1, cpu(0), 50 + 20 * static_cast<std::uint32_t>(step), true);
      if (adam) {
        AdamOptions o;
        o.lr = 1e-2;
        adam_step_(many, g, m1, m2, step, o);
        for (std::size_t k = 0; k < g.size(); ++k) adam_step_(one[k], g[k], o1[k], o2[k], step, o);
        adam_step_(host, hg, h1, h2, step, o);
      } else {
        const SgdOptions o{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3};
        sgd_step_(many, g, m1, o);
        for (std::size_t k = 0; k < g.size(); ++k) sgd_step_(one[k], g[k], o1[k], o);
        sgd_step_(host, hg, h1, o);
      }
    }
    expect_same_bits(many, host, "params (cpu)");
    expect_same_bits(one, host, "params, one at a time (cpu)");
    expect_same_bits(m1, h1, "first state (cpu)");
    expect_same_bits(o1, h1, "first state, one at a time (cpu)");
    if (adam) {
      expect_same_bits(m2, h2, "second state (cpu)");
      expect_same_bits(o2, h2, "second state, one at a time (cpu)");
    }
  }
}

}  // namespace
}  // namespace tide::testing
