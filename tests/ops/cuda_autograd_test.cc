// Autograd on a GPU: every gradient check of autograd_test.cc with the
// tensors on cuda:0 (so the backward ops, the scatter of the strided
// copies' gradients among them, run as CUDA kernels), against central
// differences and against the CPU's gradients.
#include <cmath>

#include <tide/ops/autograd.h>

#include "autograd_cases.h"
#include "cuda_ops_test_util.h"

namespace tide::testing {
namespace {

using CudaAutogradTest = ::testing::TestWithParam<EngineKind>;
TIDE_OPS_TEST_SUITE(CudaAutogradTest);

TEST_P(CudaAutogradTest, EveryOpMatchesCentralDifferencesAndTheCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for (const GradCase& c : grad_cases()) {
    const GradResult gpu = check_gradients(c, cuda(0));
    expect_gradients_match(c, gpu);
    const GradResult host = check_gradients(c, cpu(0));
    for (std::size_t i = 0; i < gpu.analytic.size(); ++i)
      for (std::size_t j = 0; j < gpu.analytic[i].size(); ++j)
        EXPECT_NEAR(gpu.analytic[i][j], host.analytic[i][j], 1e-12 + 1e-12 * std::abs(host.analytic[i][j]))
            << c.name << ": input " << i << ", element " << j;
  }
}

TEST_P(CudaAutogradTest, GradientsStayOnTheirDevice) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  Tensor w = to_gpu(std::vector<float>{1, 2, 3}).set_requires_grad();
  Tensor h = from_vector(std::vector<float>{4, 5, 6}).set_requires_grad();
  backward(sum(w * copy_to(h, cuda(0))));
  EXPECT_EQ(w.grad().device(), cuda(0));
  EXPECT_EQ(h.grad().device(), cpu(0));
  EXPECT_EQ(h.grad().to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{4, 5, 6}));
}

}  // namespace
}  // namespace tide::testing
