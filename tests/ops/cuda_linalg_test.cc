// matmul on a CUDA device against the CPU, and the matmul precision setting
// (whose parsing and CPU behaviour are tested without a GPU).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cuda_nn_test_util.h"

namespace tide::testing {
namespace {

/// Restores the process-wide setting when a test that changes it ends.
class PrecisionGuard {
 public:
  PrecisionGuard() : saved_(matmul_precision()) {}
  ~PrecisionGuard() { set_matmul_precision(saved_); }
  PrecisionGuard(const PrecisionGuard&) = delete;
  PrecisionGuard& operator=(const PrecisionGuard&) = delete;

 private:
  MatmulPrecision saved_;
};

constexpr MatmulPrecision kAllPrecisions[] = {MatmulPrecision::exact, MatmulPrecision::tf32,
                                              MatmulPrecision::bf16};

// ---------------------------------------------------------------------------
// The setting, on the CPU.

TEST(MatmulPrecision, NamesParseBack) {
  EXPECT_STREQ(matmul_precision_name(MatmulPrecision::exact), "exact");
  EXPECT_STREQ(matmul_precision_name(MatmulPrecision::tf32), "tf32");
  EXPECT_STREQ(matmul_precision_name(MatmulPrecision::bf16), "bf16");
  for (MatmulPrecision p : kAllPrecisions) EXPECT_EQ(parse_matmul_precision(matmul_precision_name(p)), p);
}

TEST(MatmulPrecision, BadTextThrowsNamingTheChoices) {
  for (const char* bad : {"", "TF32", "fp32", "exact ", "bf16x", "16"}) {
    SCOPED_TRACE(std::string("'") + bad + "'");
    try {
      parse_matmul_precision(bad);
      ADD_FAILURE() << "did not throw";
    } catch (const ValueError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(std::string("'") + bad + "'"), std::string::npos) << msg;
      for (const char* choice : {"exact", "tf32", "bf16"}) EXPECT_NE(msg.find(choice), std::string::npos) << msg;
    }
  }
}

TEST(MatmulPrecision, SetThenGet) {
  PrecisionGuard guard;
  for (MatmulPrecision p : kAllPrecisions) {
    set_matmul_precision(p);
    EXPECT_EQ(matmul_precision(), p);
  }
}

using CpuMatmulPrecisionTest = OpsTest;
TIDE_OPS_TEST_SUITE(CpuMatmulPrecisionTest);

TEST_P(CpuMatmulPrecisionTest, CpuProductsIgnoreTheSetting) {
  PrecisionGuard guard;
  const std::int64_t m = 17, k = 33, n = 9;
  const Tensor a = from_vector(random_values<float>(idx(m * k), 70), {m, k});
  const Tensor b = from_vector(random_values<float>(idx(k * n), 71), {k, n});
  set_matmul_precision(MatmulPrecision::exact);
  const std::vector<float> exact = matmul(a, b).to_vector<float>();
  for (MatmulPrecision p : {MatmulPrecision::tf32, MatmulPrecision::bf16}) {
    SCOPED_TRACE(matmul_precision_name(p));
    set_matmul_precision(p);
    EXPECT_EQ(matmul(a, b).to_vector<float>(), exact);
  }
}

// ---------------------------------------------------------------------------
// On the GPU.

using CudaLinalgTest = CudaOpsTest;
TIDE_CUDA_OPS_TEST_SUITE(CudaLinalgTest);

struct Dims {
  std::int64_t m, k, n;
};
// 1x1x1, odd sizes, sizes just past the i32 kernel's 16-wide tiles and
// cuBLAS's blockings, a tall-skinny and a wide one.
const Dims kShapes[] = {{1, 1, 1}, {3, 5, 7}, {129, 257, 65}, {64, 1, 33}, {1, 300, 1}, {17, 16, 15}};

/// matmul(a, b, ta, tb) on cpu:0 and on cuda:0, both read back.
template <typename T>
struct BothResults {
  std::vector<T> cpu, gpu;
};
template <typename T>
BothResults<T> run_both(const std::vector<T>& av, const std::vector<T>& bv, const Dims& d, bool ta,
                        bool tb) {
  const Tensor a = from_vector(av, ta ? Shape{d.k, d.m} : Shape{d.m, d.k});
  const Tensor b = from_vector(bv, tb ? Shape{d.n, d.k} : Shape{d.k, d.n});
  Tensor c_gpu = matmul(on_gpu(a), on_gpu(b), ta, tb);
  EXPECT_EQ(c_gpu.device(), cuda(0));
  EXPECT_EQ(c_gpu.shape(), (Shape{d.m, d.n}));
  EXPECT_EQ(c_gpu.dtype(), dtype_v<T>);
  return {matmul(a, b, ta, tb).template to_vector<T>(), c_gpu.template to_vector<T>()};
}

template <typename T>
void check_floating_against_cpu(std::uint32_t seed) {
  for (const Dims& d : kShapes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.k) + "x" + std::to_string(d.n) +
                     " trans_a " + std::to_string(ta) + " trans_b " + std::to_string(tb));
        const std::vector<T> av = random_values<T>(idx(d.m * d.k), seed++);
        const std::vector<T> bv = random_values<T>(idx(d.k * d.n), seed++);
        const BothResults<T> r = run_both(av, bv, d, ta, tb);
        expect_near_scaled(r.gpu, r.cpu, magnitude_matmul(av, bv, d.m, d.k, d.n, ta, tb),
                           gemm_rel_tolerance<T>(d.k));
      }
}

TEST_P(CudaLinalgTest, F64MatchesCpu) {
  TIDE_REQUIRE_GPU();
  start_engine();
  check_floating_against_cpu<double>(100);
}

TEST_P(CudaLinalgTest, F32ExactMatchesCpu) {
  TIDE_REQUIRE_GPU();
  start_engine();
  PrecisionGuard guard;
  set_matmul_precision(MatmulPrecision::exact);
  check_floating_against_cpu<float>(200);
}

TEST_P(CudaLinalgTest, F32ExactNeverRoundsInputsToTf32) {
  TIDE_REQUIRE_GPU();
  start_engine();
  PrecisionGuard guard;
  set_matmul_precision(MatmulPrecision::exact);
  // 1 + 2^-12 needs 12 mantissa bits: TF32 (10) and bf16 (7) round it to 1.
  // Every partial sum s (1 + 2^-12), s <= 256, is exact in f32, so full f32
  // arithmetic gives 256 + 2^-4 in every element, in any summation order;
  // TF32 or bf16 inputs would give 256. Sizes large enough for tensor-core
  // kernels to be candidates.
  const std::int64_t m = 256, k = 256, n = 256;
  const float x = 1.0f + std::ldexp(1.0f, -12);
  const Tensor a = on_gpu(from_vector(std::vector<float>(idx(m * k), x), {m, k}));
  const Tensor b = on_gpu(from_vector(std::vector<float>(idx(k * n), 1.0f), {k, n}));
  const float want = 256.0f + std::ldexp(1.0f, -4);
  EXPECT_EQ(matmul(a, b).to_vector<float>(), std::vector<float>(idx(m * n), want));
  EXPECT_EQ(matmul(b, a, true, true).to_vector<float>(), std::vector<float>(idx(m * n), want));
}

TEST_P(CudaLinalgTest, F32Tf32AndBf16StayWithinTheirPrecision) {
  TIDE_REQUIRE_GPU();
  start_engine();
  PrecisionGuard guard;
  // Each input may lose its low bits: TF32 keeps 10 mantissa bits, bf16 7,
  // so an input's relative error is below 2^-10 or 2^-7 even when cuBLAS
  // truncates, a product's below twice that. Bounds of 2^-8 and 2^-5 of the
  // magnitude sum leave a factor 2 for that and the f32 accumulation.
  const std::pair<MatmulPrecision, double> modes[] = {{MatmulPrecision::tf32, std::ldexp(1.0, -8)},
                                                      {MatmulPrecision::bf16, std::ldexp(1.0, -5)}};
  std::uint32_t seed = 300;
  for (const auto& [p, rel] : modes) {
    SCOPED_TRACE(matmul_precision_name(p));
    set_matmul_precision(p);
    for (const Dims& d : {Dims{129, 257, 65}, Dims{3, 5, 7}, Dims{256, 512, 128}})
      for (bool ta : {false, true}) {
        const bool tb = !ta;
        const std::vector<float> av = random_values<float>(idx(d.m * d.k), seed++);
        const std::vector<float> bv = random_values<float>(idx(d.k * d.n), seed++);
        const BothResults<float> r = run_both(av, bv, d, ta, tb);
        expect_near_scaled(r.gpu, r.cpu, magnitude_matmul(av, bv, d.m, d.k, d.n, ta, tb), rel);
      }
  }
}

TEST_P(CudaLinalgTest, I32IsExactWithWrapAround) {
  TIDE_REQUIRE_GPU();
  start_engine();
  std::uint32_t seed = 400;
  for (const Dims& d : kShapes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(std::to_string(d.m) + "x" + std::to_string(d.k) + "x" + std::to_string(d.n) +
                     " trans_a " + std::to_string(ta) + " trans_b " + std::to_string(tb));
        // Small values, and values over the whole range whose products and
        // sums wrap around (the CPU's result mod 2^32 is the reference).
        for (double range : {50.0, 2147483647.0}) {
          const auto av = random_values<std::int32_t>(idx(d.m * d.k), seed++, -range, range);
          const auto bv = random_values<std::int32_t>(idx(d.k * d.n), seed++, -range, range);
          const BothResults<std::int32_t> r = run_both(av, bv, d, ta, tb);
          EXPECT_EQ(r.gpu, r.cpu);
        }
      }
}

TEST_P(CudaLinalgTest, EmptyDimensions) {
  TIDE_REQUIRE_GPU();
  start_engine();
  for (DType dt : {DType::f32, DType::f64, DType::i32}) {
    SCOPED_TRACE(dtype_name(dt));
    dispatch_dtype(dt, [&](auto tag) {
      using T = decltype(tag);
      const std::vector<T> none;
      // k = 0: an empty sum in every element, also transposed.
      Tensor c = matmul(on_gpu(from_vector(none, {3, 0})), on_gpu(from_vector(none, {0, 4})));
      EXPECT_EQ(c.shape(), (Shape{3, 4}));
      EXPECT_EQ(c.template to_vector<T>(), std::vector<T>(12, T(0)));
      c = matmul(on_gpu(from_vector(none, {0, 3})), on_gpu(from_vector(none, {2, 0})), true, true);
      EXPECT_EQ(c.template to_vector<T>(), std::vector<T>(6, T(0)));
      // m = 0 or n = 0: nothing to compute.
      const Tensor two_by_four = on_gpu(from_vector(std::vector<T>(8, T(1)), {2, 4}));
      EXPECT_EQ(matmul(on_gpu(from_vector(none, {0, 2})), two_by_four).shape(), (Shape{0, 4}));
      const Tensor three_by_two = on_gpu(from_vector(std::vector<T>(6, T(1)), {3, 2}));
      EXPECT_EQ(matmul(three_by_two, on_gpu(from_vector(none, {2, 0}))).template to_vector<T>(),
                std::vector<T>{});
    });
  }
}

TEST_P(CudaLinalgTest, FrontendChecksAreShared) {
  TIDE_REQUIRE_GPU();
  start_engine();
  const Tensor a = on_gpu(from_vector(std::vector<float>(6, 1.0f), {2, 3}));
  const Tensor b = on_gpu(from_vector(std::vector<float>(20, 1.0f), {4, 5}));
  const Tensor on_cpu = from_vector(std::vector<float>(6, 1.0f), {3, 2});
  const Tensor f64 = on_gpu(from_vector(std::vector<double>(6, 1.0), {3, 2}));
  eng_->wait_all();
  const std::uint64_t before = eng_->stats().ops_pushed;
  EXPECT_THROW(matmul(a, b), ShapeError);
  EXPECT_THROW(matmul(a, on_cpu), DeviceError);
  EXPECT_THROW(matmul(a, f64), DTypeError);
  EXPECT_EQ(eng_->stats().ops_pushed, before);
}

}  // namespace
}  // namespace tide::testing
