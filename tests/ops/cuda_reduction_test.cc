// CUDA reductions against the CPU backend. i32 sums and every max compare
// exactly; f32 and f64 sums and means within the bound below, since the GPU
// adds in a tree where the CPU adds in sequence. Reruns on the GPU must give
// identical bits.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "cuda_ops_test_util.h"
#if TIDE_HAVE_CUDA
#include "../../ops/src/cuda/reduction_kernels.h"  // the one-launch count
#endif

namespace tide::testing {
namespace {

using CudaReductionTest = ::testing::TestWithParam<EngineKind>;
TIDE_OPS_TEST_SUITE(CudaReductionTest);

/// What one reduction covers: every element (axis unset) or one axis.
struct Case {
  Shape shape;
  std::optional<int> axis;
};

std::string describe(const Case& c) {
  return c.shape.str() + (c.axis ? " axis " + std::to_string(*c.axis) : " all");
}

/// Long and short rows and columns, several chunks per output (a few, which
/// one launch reduces, and many), empty axes, and shapes whose sizes are not
/// multiples of the block size.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (std::int64_t n : kGpuSizes) out.push_back({Shape{n}, std::nullopt});
  const std::int64_t big = kGpuSizes.back();
  for (const Shape& s : {Shape{0, 3}, Shape{3, 0}, Shape{1000, 3}, Shape{3, 1000}, Shape{300, 256},
                         Shape{7, 300, 5}, Shape{2, 513, 4}, Shape{big, 2}, Shape{2, big},
                         // packed columns in many chunks with a ragged last one; a sum
                         // of all of it in more than 1,024 row chunks
                         Shape{1030, 1028}, Shape{4099, 1037},
                         // columns in 2 to 8 chunks, both passes in one launch: packed
                         // (a bias gradient at batch 64; a ragged last chunk; many
                         // blocks) and not (7 and 3 wide; a whole short vector)
                         Shape{64, 512}, Shape{200, 36}, Shape{40, 33000}, Shape{5, 250, 4},
                         Shape{100, 7}, Shape{5, 250, 3}, Shape{250}, Shape{33}}) {
    out.push_back({s, std::nullopt});
    for (int axis = 0; axis < s.ndim(); ++axis) out.push_back({s, axis});
  }
  out.push_back({Shape{7, 300, 5}, -1});
  out.push_back({Shape{}, std::nullopt});
  return out;
}

enum class Red { sum, mean, max, min };
const char* red_name(Red r) {
  return r == Red::sum ? "sum" : r == Red::mean ? "mean" : r == Red::max ? "max" : "min";
}

Tensor reduce(Red r, const Tensor& t, const Case& c) {
  switch (r) {
    case Red::sum: return c.axis ? sum(t, *c.axis) : sum(t);
    case Red::mean: return c.axis ? mean(t, *c.axis) : mean(t);
    case Red::min: return c.axis ? min(t, *c.axis) : min(t);
    case Red::max: break;
  }
  return c.axis ? max(t, *c.axis) : max(t);
}

/// For each output, the number of elements reduced and the sum of their
/// magnitudes (row-major [outer, len, inner], as the ops view it).
template <typename T>
std::pair<std::int64_t, std::vector<double>> magnitudes(const std::vector<T>& v, const Case& c) {
  std::int64_t outer = 1, len = c.shape.numel(), inner = 1;
  if (c.axis) {
    const int ax = *c.axis < 0 ? *c.axis + c.shape.ndim() : *c.axis;
    len = c.shape[ax];
    outer = inner = 1;
    for (int d = 0; d < ax; ++d) outer *= c.shape[d];
    for (int d = ax + 1; d < c.shape.ndim(); ++d) inner *= c.shape[d];
  }
  std::vector<double> mag(static_cast<std::size_t>(outer * inner), 0.0);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t k = 0; k < len; ++k)
      for (std::int64_t j = 0; j < inner; ++j)
        mag[static_cast<std::size_t>(o * inner + j)] +=
            std::abs(static_cast<double>(v[static_cast<std::size_t>((o * len + k) * inner + j)]));
  return {len, mag};
}

/// Any order of adding len terms in double is within (len - 1) u sum|x| of
/// the exact sum (u = 2^-53), so the GPU's tree and the CPU's sequence are
/// within twice that of each other; each then rounds to T once (half an
/// ulp of T each). A mean divides both the sums and the bound by len.
template <typename T>
void expect_sums_close(const std::vector<T>& got, const std::vector<T>& want,
                       const std::vector<double>& mag, std::int64_t len, bool mean,
                       const std::string& what) {
  const double u = 0x1p-53, eps = std::numeric_limits<T>::epsilon();
  const double terms = static_cast<double>(std::max<std::int64_t>(len - 1, 0));
  expect_elements(
      got, want,
      [&](T g, T w, std::size_t i) {
        if (same_value(g, w)) return true;
        double bound = 2 * terms * u * mag[i];
        if (mean) bound /= static_cast<double>(len);
        bound += eps * std::max(std::abs(static_cast<double>(g)), std::abs(static_cast<double>(w)));
        return std::abs(static_cast<double>(g) - static_cast<double>(w)) <= bound;
      },
      what);
}

TEST_P(CudaReductionTest, MatchesCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  for_each_dtype_of([&](auto tag) {
    using T = decltype(tag);
    const DType dt = dtype_v<T>;
    for (const Case& c : cases()) {
      // i32 values near the range's ends: partial sums overflow int32, and
      // the int64 accumulator must carry them.
      const double lim = std::is_integral_v<T> ? 2e9 : 1.0;
      std::vector<T> v = random_values<T>(static_cast<std::size_t>(c.shape.numel()), 70, -lim, lim);
      Tensor ct = from_vector(v, c.shape), gt = to_gpu(v, c.shape);
      const auto [len, mag] = magnitudes(v, c);
      for (Red r : {Red::sum, Red::mean, Red::max, Red::min}) {
        if (r == Red::mean && !std::is_floating_point_v<T>) continue;
        if ((r == Red::max || r == Red::min) && len == 0) continue;  // refused on the frontend (below)
        const std::string what = std::string(red_name(r)) + " " + dtype_name(dt) + " " + describe(c);
        Tensor g = reduce(r, gt, c), cr = reduce(r, ct, c);
        EXPECT_EQ(g.device(), cuda(0)) << what;
        EXPECT_EQ(g.dtype(), cr.dtype()) << what;
        EXPECT_EQ(g.shape(), cr.shape()) << what;
        if (r == Red::max || r == Red::min || std::is_integral_v<T>) {
          // Random floats are never +-0, so the sign of a zero tie never shows.
          expect_exact(g.to_vector<T>(), cr.to_vector<T>(), what);
        } else {
          expect_sums_close(g.to_vector<T>(), cr.to_vector<T>(), mag, len, r == Red::mean, what);
        }
      }
    }
  });
}

TEST_P(CudaReductionTest, RerunsGiveIdenticalBits) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  const std::int64_t big = kGpuSizes.back();
  for (const Case& c : {Case{Shape{big}, std::nullopt}, Case{Shape{2, big}, 1}, Case{Shape{big, 2}, 0},
                        Case{Shape{7, 300, 5}, 1}}) {
    Tensor t = rand(c.shape, {DType::f32, cuda(0)}, {8});
    Tensor td = rand(c.shape, {DType::f64, cuda(0)}, {9});
    for (Red r : {Red::sum, Red::mean}) {
      const std::vector<float> first = reduce(r, t, c).to_vector<float>();
      const std::vector<float> second = reduce(r, t, c).to_vector<float>();
      ASSERT_EQ(first.size(), second.size());
      EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * sizeof(float)), 0)
          << red_name(r) << " f32 " << describe(c);
      const std::vector<double> d1 = reduce(r, td, c).to_vector<double>();
      const std::vector<double> d2 = reduce(r, td, c).to_vector<double>();
      EXPECT_EQ(std::memcmp(d1.data(), d2.data(), d1.size() * sizeof(double)), 0)
          << red_name(r) << " f64 " << describe(c);
    }
  }
}

// A column sum or mean in a few chunks (one launch: each output's chunks in
// one block) adds as the two passes do: each chunk of rows in row order from
// zero, then the chunks' sums in chunk order from zero (a mean then divides
// by the count). For these f64 shapes the kernels cut the reduced axis into
// at most ceil(len / 32) chunks, evened out: 7 of 29 rows for 200 rows (the
// last 26), 8 of 32 for 250 (the last 26), packed in pairs of columns for 36
// and 4 columns and one by one for 3. In double every other order shows in
// the last bits.
TEST_P(CudaReductionTest, ColumnsInAFewChunksAddInTheTwoPassesOrder) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  struct Cut {
    Shape shape;
    int axis;
    std::int64_t chunk_len;
  };
  for (const Cut& cut : {Cut{Shape{200, 36}, 0, 29}, Cut{Shape{5, 250, 4}, 1, 32}, Cut{Shape{5, 250, 3}, 1, 32}}) {
    const std::vector<double> v = random_values<double>(static_cast<std::size_t>(cut.shape.numel()), 71, -1.0, 1.0);
    const std::int64_t len = cut.shape[cut.axis];
    std::int64_t outer = 1, inner = 1;
    for (int d = 0; d < cut.axis; ++d) outer *= cut.shape[d];
    for (int d = cut.axis + 1; d < cut.shape.ndim(); ++d) inner *= cut.shape[d];
    std::vector<double> want(static_cast<std::size_t>(outer * inner));
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t j = 0; j < inner; ++j) {
        double total = 0.0;
        for (std::int64_t begin = 0; begin < len; begin += cut.chunk_len) {
          double chunk = 0.0;
          for (std::int64_t k = begin; k < std::min(len, begin + cut.chunk_len); ++k)
            chunk += v[static_cast<std::size_t>((o * len + k) * inner + j)];
          total += chunk;
        }
        want[static_cast<std::size_t>(o * inner + j)] = total;
      }
    const Tensor g = to_gpu(v, cut.shape);
    for (bool is_mean : {false, true}) {
      const std::vector<double> got = (is_mean ? mean(g, cut.axis) : sum(g, cut.axis)).to_vector<double>();
      ASSERT_EQ(got.size(), want.size()) << cut.shape.str();
      for (std::size_t i = 0; i < got.size(); ++i) {
        const double w = is_mean ? want[i] / static_cast<double>(len) : want[i];
        EXPECT_EQ(std::memcmp(&got[i], &w, sizeof(double)), 0)
            << (is_mean ? "mean " : "sum ") << cut.shape.str() << " axis " << cut.axis << " output " << i << ": "
            << got[i] << " vs " << w;
      }
    }
  }
}

#if TIDE_HAVE_CUDA  // reads the CUDA kernels' one-launch count
/// A tensor's elements as bytes, on the host.
std::vector<unsigned char> raw_bytes(const Tensor& t) {
  std::vector<unsigned char> out(t.nbytes());
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> v = t.to_vector<T>();
    std::memcpy(out.data(), v.data(), out.size());
  });
  return out;
}

// Rows in several chunks: launched by a stream's worker, both passes run in
// one launch (each row's last block combines the row's partials); launched
// anywhere else, in two. Both give the same bits: the naive engine (every
// op launched on the frontend thread) against the async engine with the
// frontend's launches off (every op launched by its stream's worker), over
// rows of 3, 9, 19 and 74 chunks (pass 2 by one thread, and by a block),
// every dtype and reduction. (No case has more tasks than the grid has
// blocks, about 2^28 elements: a block is last for one row at most.)
TEST(CudaReductionLaunches, RowsInOneLaunchGiveTheBitsOfTwo) {
  TIDE_REQUIRE_GPU();
  const std::vector<Case> rows = {Case{Shape{7, 300, 5}, std::nullopt}, Case{Shape{40, 33000}, 1},
                                  Case{Shape{300, 256}, std::nullopt}, Case{Shape{300000}, std::nullopt},
                                  Case{Shape{2, 300000}, 1}};
  std::uint64_t launches = 0;  // reductions per run
  auto run = [&](EngineKind kind) {
    GpuEngine eng(kind);
    SyncPolicy p = eng->policy();
    p.inline_op_bytes = 0;
    eng->set_policy(p);
    std::vector<std::vector<unsigned char>> out;
    launches = 0;
    for (const Case& c : rows)
      for_each_numeric_dtype([&](auto tag) {
        using T = decltype(tag);
        const double lim = std::is_integral_v<T> ? 2e9 : 1.0;
        const Tensor t = to_gpu(random_values<T>(static_cast<std::size_t>(c.shape.numel()), 72, -lim, lim), c.shape);
        for (Red r : {Red::sum, Red::mean, Red::max, Red::min}) {
          if (r == Red::mean && !std::is_floating_point_v<T>) continue;
          const Tensor g = reduce(r, t, c);
          out.push_back(raw_bytes(g));
          ++launches;
        }
      });
    return out;
  };
  const std::uint64_t before = cuda_kernels::rows_reduced_in_one_launch();
  const std::vector<std::vector<unsigned char>> two = run(EngineKind::naive);
  const std::uint64_t middle = cuda_kernels::rows_reduced_in_one_launch();
  EXPECT_EQ(middle, before) << "the naive engine launched a reduction as a stream's worker";
  const std::vector<std::vector<unsigned char>> one = run(EngineKind::async);
  // Unless the environment turned it off (TIDE_CUDA_ONE_LAUNCH=0).
  EXPECT_EQ(cuda_kernels::rows_reduced_in_one_launch() - middle,
            cuda_kernels::one_launch_reductions() ? launches : 0)
      << "every reduction of the async engine's workers runs in one launch";
  ASSERT_EQ(two.size(), one.size());
  for (std::size_t i = 0; i < two.size(); ++i) EXPECT_EQ(two[i], one[i]) << "result " << i;
}
#endif

TEST_P(CudaReductionTest, NaNPropagates) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  const std::int64_t n = kGpuSizes.back();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // The first element, elements in later chunks, the last element.
  for (std::int64_t at : {std::int64_t{0}, std::int64_t{4095}, std::int64_t{500000}, n - 1}) {
    std::vector<float> v = random_values<float>(static_cast<std::size_t>(n), 80);
    v[static_cast<std::size_t>(at)] = nan;
    Tensor g = to_gpu(v);
    EXPECT_TRUE(std::isnan(max(g).item<float>())) << "max, NaN at " << at;
    EXPECT_TRUE(std::isnan(min(g).item<float>())) << "min, NaN at " << at;
    EXPECT_TRUE(std::isnan(sum(g).item<float>())) << "sum, NaN at " << at;
  }
  // Along an axis only the outputs whose line holds the NaN.
  std::vector<float> v = random_values<float>(3 * 1000, 81);
  v[1000 + 17] = nan;
  Tensor g = to_gpu(v, Shape{3, 1000}), c = from_vector(v, Shape{3, 1000});
  expect_exact(max(g, 1).to_vector<float>(), max(c, 1).to_vector<float>(), "max along 1 with NaN");
  std::vector<float> s = sum(g, 1).to_vector<float>();
  EXPECT_FALSE(std::isnan(s[0]));
  EXPECT_TRUE(std::isnan(s[1]));
  EXPECT_FALSE(std::isnan(s[2]));
}

TEST_P(CudaReductionTest, EmptyAxesAsOnCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  Tensor empty = zeros({0}, {DType::f32, cuda(0)});
  EXPECT_EQ(sum(empty).item<float>(), 0.0f);
  EXPECT_TRUE(std::isnan(mean(empty).item<float>()));  // 0 / 0, as on the CPU
  EXPECT_EQ(sum(zeros({3, 0}, {DType::i32, cuda(0)}), 1).to_vector<std::int32_t>(),
            std::vector<std::int32_t>(3, 0));
  EXPECT_EQ(max(zeros({0, 3}, {DType::f64, cuda(0)}), 1).shape(), (Shape{0}));
  Tensor ints = zeros({3}, {DType::i32, cuda(0)});
  const std::uint64_t pushed = eng->stats().ops_pushed;
  EXPECT_THROW(max(empty), ValueError);
  EXPECT_THROW(mean(ints), DTypeError);
  EXPECT_EQ(eng->stats().ops_pushed, pushed);  // refused before anything was pushed
}

}  // namespace
}  // namespace tide::testing
