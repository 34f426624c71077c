// CUDA creation ops against the CPU backend: fills (every dtype, ragged
// sizes), ranges and host copies exactly, and Philox random numbers bit for
// bit for the same seed and offset (f64 normals within 1e-12, see below).
#include <cmath>
#include <limits>
#include <tuple>

#include "cuda_ops_test_util.h"

namespace tide::testing {
namespace {

using CudaCreationTest = ::testing::TestWithParam<EngineKind>;
TIDE_OPS_TEST_SUITE(CudaCreationTest);

TensorOptions on_gpu(DType t) { return {t, cuda(0)}; }
TensorOptions on_cpu(DType t) { return {t, cpu(0)}; }

TEST_P(CudaCreationTest, FillsMatchCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  // Fills store 16-byte packs, then the elements past the last whole pack:
  // sizes with no whole pack, one and a bit, and ragged tails of every
  // length a pack of 4, 2 or 16 leaves.
  std::vector<std::int64_t> sizes = kGpuSizes;
  for (std::int64_t n : {2, 5, 6, 7, 17, 31, 4099}) sizes.push_back(n);
  for_each_numeric_dtype([&](auto tag) {
    using T = decltype(tag);
    const DType dt = dtype_v<T>;
    for (std::int64_t n : sizes) {
      const Shape s{n};
      Tensor z = zeros(s, on_gpu(dt));
      EXPECT_EQ(z.device(), cuda(0));
      EXPECT_EQ(z.dtype(), dt);
      EXPECT_EQ(z.shape(), s);
      expect_exact(z.to_vector<T>(), zeros(s, on_cpu(dt)).to_vector<T>(), label("zeros", dt, n));
      expect_exact(ones(s, on_gpu(dt)).to_vector<T>(), ones(s, on_cpu(dt)).to_vector<T>(),
                   label("ones", dt, n));
      // -7.9 truncates to -7 in i32 on both devices; 1e30 fits only floats.
      std::vector<double> values = {-2.75, -7.9};
      if (std::is_floating_point_v<T>) values.push_back(1e30);
      for (double v : values)
        expect_exact(full(s, v, on_gpu(dt)).to_vector<T>(), full(s, v, on_cpu(dt)).to_vector<T>(),
                     label("full", dt, n) + " v=" + std::to_string(v));
    }
  });
  for (std::int64_t n : sizes) {
    EXPECT_EQ(full({n}, 1.0, on_gpu(DType::b8)).to_vector<bool>(), std::vector<bool>(static_cast<std::size_t>(n), true))
        << "bool fill of " << n;
    EXPECT_EQ(zeros({n}, on_gpu(DType::b8)).to_vector<bool>(), std::vector<bool>(static_cast<std::size_t>(n), false))
        << "bool fill of " << n;
  }
  // Shapes of several dimensions and a 0-d tensor.
  EXPECT_EQ(full({2, 0, 3}, 1.0, on_gpu(DType::f32)).numel(), 0);
  EXPECT_EQ(full(Shape{}, 4.5, on_gpu(DType::f64)).item<double>(), 4.5);
  EXPECT_EQ(ones({3, 5}, on_gpu(DType::i32)).to_vector<std::int32_t>(), std::vector<std::int32_t>(15, 1));
}

TEST_P(CudaCreationTest, ArangeMatchesCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  const double big = static_cast<double>(kGpuSizes.back());
  // (start, stop, step): steps that are not exact in binary, descending and
  // empty ranges, and ranges of 2^20 + 7 elements.
  const std::vector<std::tuple<double, double, double>> ranges = {
      {0, 5, 1}, {1, 2, 0.25}, {5, 0, -2}, {-1, 1, 0.1}, {0, 1, 0.3}, {0.5, -0.5, -0.01},
      {0, 0, 1}, {3, 1, 1}, {0, big, 1}, {-3, 3, 6 / big}, {1e6, -1e6, -2e6 / big}};
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    const DType dt = dtype_v<T>;
    for (const auto& [start, stop, step] : ranges) {
      Tensor g = arange(start, stop, step, on_gpu(dt));
      Tensor c = arange(start, stop, step, on_cpu(dt));
      EXPECT_EQ(g.shape(), c.shape());
      // Exact: start + i * step is rounded after the multiply and after the
      // add on both devices (the kernel keeps nvcc from fusing them).
      expect_exact(g.to_vector<T>(), c.to_vector<T>(),
                   label("arange", dt, c.numel()) + " start=" + std::to_string(start) +
                       " step=" + std::to_string(step));
    }
  });
}

TEST_P(CudaCreationTest, FromVectorCopiesToTheGpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    for (std::int64_t n : kGpuSizes) {
      std::vector<T> v = random_values<T>(static_cast<std::size_t>(n), 60, -1000, 1000);
      const std::vector<T> expected = v;
      Tensor g = from_vector(v, Shape{n}, cuda(0));
      std::fill(v.begin(), v.end(), T(0));  // the op holds its own copy
      EXPECT_EQ(g.device(), cuda(0));
      expect_exact(g.to_vector<T>(), expected, label("from_vector", dtype_v<T>, n));
    }
  });
  std::vector<double> m = random_values<double>(12, 61);
  EXPECT_EQ(from_vector(m, Shape{3, 4}, cuda(0)).to_vector<double>(), m);
}

// CUDA's double log is within 1 ulp and sin and cos within 2 (CUDA C++
// Programming Guide), glibc's within 1: a normal (|z| < 7 for 32-bit
// uniforms) may differ by a few ulps, ~1e-15. f32 normals round that double
// once, so they come out equal unless it lies within those few ulps of a
// rounding boundary of float, which for these seeds it does not.
constexpr double kNormalF64Tolerance = 1e-12;

template <typename T>
void expect_random_equal(const Tensor& g, const Tensor& c, bool normal, const std::string& what) {
  if (normal && std::is_same_v<T, double>) {
    expect_elements(
        g.to_vector<T>(), c.to_vector<T>(),
        [](T x, T y, std::size_t) { return std::abs(x - y) <= kNormalF64Tolerance; }, what);
  } else {
    expect_exact(g.to_vector<T>(), c.to_vector<T>(), what);
  }
}

TEST_P(CudaCreationTest, SeededRandomMatchesCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for (std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{42}, (std::uint64_t{1} << 40) + 3}) {
    for (DType dt : {DType::f32, DType::f64}) {
      for (std::int64_t n : kGpuSizes) {
        const std::string what = label("rand", dt, n) + " seed=" + std::to_string(seed);
        dispatch_dtype(dt, [&](auto tag) {
          using T = decltype(tag);
          if constexpr (std::is_floating_point_v<T>) {
            Tensor gu = rand({n}, on_gpu(dt), {seed}), cu = rand({n}, on_cpu(dt), {seed});
            expect_random_equal<T>(gu, cu, false, what);
            for (T u : gu.to_vector<T>()) ASSERT_TRUE(u >= T(0) && u < T(1)) << what << ": " << u;
            Tensor gn = randn({n}, on_gpu(dt), {seed}), cn = randn({n}, on_cpu(dt), {seed});
            expect_random_equal<T>(gn, cn, true, "randn " + what);
          }
        });
      }
    }
  }
}

TEST_P(CudaCreationTest, UnseededRandomContinuesTheEngineOffset) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  // Offsets that start inside a Philox block (not a multiple of 4) and
  // lengths that end inside one.
  for (std::uint64_t skip : {0u, 1u, 2u, 3u, 5u, 4099u}) {
    for (std::int64_t n : {std::int64_t{1}, std::int64_t{3}, std::int64_t{1000}, kGpuSizes.back()}) {
      for (DType dt : {DType::f32, DType::f64}) {
        for (bool normal : {false, true}) {
          auto make = [&](Device d) {
            eng->manual_seed(11);
            eng->take_rng_offset(skip);
            Tensor t = normal ? randn({n}, {dt, d}) : rand({n}, {dt, d});
            // The call advanced the offset by n, on either device.
            EXPECT_EQ(eng->take_rng_offset(0), skip + static_cast<std::uint64_t>(n));
            return t;
          };
          Tensor g = make(cuda(0)), c = make(cpu(0));
          const std::string what = label(normal ? "randn" : "rand", dt, n) + " skip=" + std::to_string(skip);
          dispatch_dtype(dt, [&](auto tag) {
            using T = decltype(tag);
            if constexpr (std::is_floating_point_v<T>) expect_random_equal<T>(g, c, normal, what);
          });
        }
      }
    }
  }
}

TEST_P(CudaCreationTest, RandF32StaysBelowOne) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  // Under seed 3, element 4 * 2350790 is within 2^-25 of 1 in double (see
  // the CPU test of the same name): it must become the float below 1.
  eng->manual_seed(3);
  eng->take_rng_offset(4 * 2350790ull);
  std::vector<float> u = rand({5}, on_gpu(DType::f32)).to_vector<float>();
  EXPECT_EQ(u[0], std::nextafter(1.0f, 0.0f));
  for (float x : u) EXPECT_LT(x, 1.0f);
}

TEST_P(CudaCreationTest, RandomRefusesI32OnTheFrontend) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  const std::uint64_t offset_before = eng->take_rng_offset(0);
  const std::uint64_t pushed_before = eng->stats().ops_pushed;
  EXPECT_THROW(rand({4}, on_gpu(DType::i32)), DTypeError);
  EXPECT_THROW(randn({4}, on_gpu(DType::i32)), DTypeError);
  EXPECT_EQ(eng->stats().ops_pushed, pushed_before);
  EXPECT_EQ(eng->take_rng_offset(0), offset_before);  // a refused call takes no numbers
}

}  // namespace
}  // namespace tide::testing
