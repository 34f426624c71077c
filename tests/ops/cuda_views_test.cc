// The copying layout ops on the GPU against the CPU backend (itself checked
// by views_test.cc), every dtype: transposes, permutations, slices with
// negative steps, selections, a zero stride, and a transpose large enough
// for the grid-stride loop to run more than one grid. Views on the GPU share
// storage as on the CPU.
#include <tide/ops/views.h>

#include "cuda_ops_test_util.h"
#include "mirror_program.h"

namespace tide::testing {
namespace {

using CudaViewsTest = ::testing::TestWithParam<EngineKind>;
TIDE_OPS_TEST_SUITE(CudaViewsTest);

template <typename T, typename Op>
void expect_same_on_both(const Shape& shape, Op op, const std::string& what) {
  const std::vector<T> v = random_values<T>(static_cast<std::size_t>(shape.numel()), 9, -100, 100);
  Tensor c = from_vector(v, shape), g = to_gpu(v, shape);
  Tensor gr = op(g);
  EXPECT_EQ(gr.device(), cuda(0)) << what;
  Tensor cr = op(c);
  EXPECT_EQ(gr.shape(), cr.shape()) << what;
  expect_exact(gr.template to_vector<T>(), cr.template to_vector<T>(), what + " " + dtype_name(dtype_v<T>));
}

TEST_P(CudaViewsTest, CopyingLayoutOpsMatchCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    expect_same_on_both<T>({33, 65}, [](const Tensor& t) { return transpose(t); }, "transpose");
    expect_same_on_both<T>({2, 3, 4, 5}, [](const Tensor& t) { return permute(t, {3, 1, 0, 2}); }, "permute");
    expect_same_on_both<T>({7, 9}, [](const Tensor& t) { return slice(t, 1, -1, -10, -2); }, "slice back");
    expect_same_on_both<T>({7, 9}, [](const Tensor& t) { return slice(t, 0, 1, 6, 2); }, "slice rows");
    expect_same_on_both<T>({7, 9}, [](const Tensor& t) { return select(t, 1, 4); }, "select");
    expect_same_on_both<T>({12}, [](const Tensor& t) { return strided(t, {3, 4}, {0, 3}, 0); }, "zero stride");
    expect_same_on_both<T>({0, 5}, [](const Tensor& t) { return transpose(t); }, "empty");
  });
  expect_same_on_both<float>({4099, 4097}, [](const Tensor& t) { return transpose(t); }, "large transpose");
}

TEST_P(CudaViewsTest, ViewsShareStorageOnTheGpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  Tensor a = to_gpu(std::vector<float>(20, 1.0f), Shape{4, 5});
  Tensor row = reshape(a, {20});
  add_(row, 2.0);
  EXPECT_TRUE(row.is_same(a));
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(20, 3.0f));
}

TEST_P(CudaViewsTest, CatAndStackMatchCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    expect_same_on_both<T>({7, 9}, [](const Tensor& t) { return cat({t, t, t}, 1); }, "cat columns");
    expect_same_on_both<T>({7, 9}, [](const Tensor& t) { return cat({t, t}, 0); }, "cat rows");
    expect_same_on_both<T>({33, 65}, [](const Tensor& t) { return stack({t, t}, 2); }, "stack last");
  });
}

TEST_P(CudaViewsTest, AssignmentAlongStridesMatchesCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  const Shape base{257, 129};
  const std::vector<float> v = random_values<float>(static_cast<std::size_t>(base.numel()), 6);
  const std::vector<float> col = random_values<float>(257, 7), steps = random_values<float>(129 * 43, 8);
  auto run = [&](Device d) {
    Tensor t = copy_to(from_vector(v, base), d);
    assign_strided_(t, {257}, {129}, 5, copy_to(from_vector(col), d));                   // t[:, 5]
    assign_strided_(t, {43, 129}, {-6 * 129, 1}, 256 * 129, copy_to(from_vector(steps, {43, 129}), d));  // t[::-6]
    Tensor m = copy_to(zeros({64, 3}, {DType::b8}), d);
    assign_strided_(m, {64}, {3}, 2, copy_to(full({64}, 1.0, {DType::b8}), d));
    return std::make_pair(t.to_vector<float>(), m.to_vector<bool>());
  };
  EXPECT_EQ(run(cuda(0)), run(cpu(0)));
}

TEST_P(CudaViewsTest, PartViewsAtAnyOffsetMatchCpu) {
  // Views one element into a block are not 16-byte aligned: the vectorised
  // elementwise path must fall back, and the partial-overlap rules (a copy
  // of the operand) must hold on the GPU too.
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  const std::int64_t n = 100003;
  const std::vector<float> v = random_values<float>(static_cast<std::size_t>(n), 5, -10, 10);
  auto run = [&](Tensor x) {
    Tensor tail = slice(x, 0, 1, n), head = slice(x, 0, 0, n - 1);
    EXPECT_TRUE(tail.is_same(x));
    add_(tail, head);
    Tensor mid = slice(x, 0, 3, n - 2);
    mul_(mid, 0.5);
    Tensor dst = slice(x, 0, 7, n), src = slice(x, 0, 0, n - 7);
    copy_(dst, src);
    return x.to_vector<float>();
  };
  expect_exact(run(to_gpu(v, Shape{n})), run(from_vector(v, Shape{n})), "part views");
}

TEST_P(CudaViewsTest, MirrorsFollowTheirSourceInStreamOrder) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for (std::uint32_t seed = 5; seed <= 7; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    run_mirror_program(cuda(0), seed, 150);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace tide::testing
