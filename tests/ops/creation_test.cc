// Creation ops: fills, arange, from_vector, Philox rand/randn, and the
// blockers that read a tensor back (item, to_vector, printing).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>

#include <tide/ops/philox.h>

#include "ops_test_util.h"

namespace tide::testing {
namespace {

// Random123's known-answer vectors for philox4x32_10 (kat_vectors):
// counter words, key words, expected output.
TEST(Philox, KnownAnswers) {
  philox::Block zero = philox::philox4x32_10(std::uint64_t{0}, std::uint64_t{0});
  EXPECT_EQ(zero.v[0], 0x6627e8d5u);
  EXPECT_EQ(zero.v[1], 0xe169c58du);
  EXPECT_EQ(zero.v[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.v[3], 0x9b00dbd8u);

  philox::Block ones = philox::philox4x32_10(
      philox::Block{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu);
  EXPECT_EQ(ones.v[0], 0x408f276du);
  EXPECT_EQ(ones.v[1], 0x41c83b0eu);
  EXPECT_EQ(ones.v[2], 0xa20bc7c6u);
  EXPECT_EQ(ones.v[3], 0x6d5451fdu);

  philox::Block pi = philox::philox4x32_10(
      philox::Block{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(pi.v[0], 0xd16cfe09u);
  EXPECT_EQ(pi.v[1], 0x94fdccebu);
  EXPECT_EQ(pi.v[2], 0x5001e420u);
  EXPECT_EQ(pi.v[3], 0x24126ea1u);
}

TEST(Philox, SixtyFourBitFormPlacesCounterAndSeedInLowWords) {
  const std::uint64_t counter = 0x0123456789abcdefull, seed = 0xfedcba9876543210ull;
  philox::Block a = philox::philox4x32_10(counter, seed);
  philox::Block b = philox::philox4x32_10(philox::Block{{0x89abcdefu, 0x01234567u, 0u, 0u}},
                                          0x76543210u, 0xfedcba98u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.v[i], b.v[i]);
}

// What rand and randn compute for element j (see ops/src/creation.cc): lane
// j % 4 of Philox block j / 4; normals pair lanes (0, 1) and (2, 3).
double uniform_ref(std::uint64_t j, std::uint64_t seed) {
  return philox::to_unit(philox::philox4x32_10(j / 4, seed).v[j % 4]);
}
double normal_ref(std::uint64_t j, std::uint64_t seed) {
  philox::Block b = philox::philox4x32_10(j / 4, seed);
  const std::uint64_t first = j % 4 / 2 * 2;
  double u1 = philox::to_unit(b.v[first]), u2 = philox::to_unit(b.v[first + 1]);
  double r = std::sqrt(-2.0 * std::log(1.0 - u1)), theta = 2.0 * std::numbers::pi * u2;
  return j % 2 == 0 ? r * std::cos(theta) : r * std::sin(theta);
}

using CreationTest = OpsTest;
TIDE_OPS_TEST_SUITE(CreationTest);

TEST_P(CreationTest, ZerosOnesFull) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(z.dtype(), DType::f32);
  EXPECT_EQ(z.device(), cpu(0));
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(6, 0.0f));

  Tensor o = ones({4}, {DType::f64, cpu(1)});
  EXPECT_EQ(o.device(), cpu(1));
  EXPECT_EQ(o.to_vector<double>(), std::vector<double>(4, 1.0));

  Tensor f = full({3, 1}, -2.75, {DType::f64});
  EXPECT_EQ(f.to_vector<double>(), std::vector<double>(3, -2.75));

  // i32 truncates toward zero, like a C++ conversion.
  Tensor fi = full({2}, -7.9, {DType::i32});
  EXPECT_EQ(fi.dtype(), DType::i32);
  EXPECT_EQ(fi.to_vector<std::int32_t>(), (std::vector<std::int32_t>{-7, -7}));

  Tensor scalar = full(Shape{}, 4.5);
  EXPECT_EQ(scalar.ndim(), 0);
  EXPECT_EQ(scalar.item<float>(), 4.5f);

  Tensor empty = zeros({0, 3});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_TRUE(empty.to_vector<float>().empty());
}

TEST_P(CreationTest, Arange) {
  EXPECT_EQ(arange(0, 5).to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(1, 2, 0.25).to_vector<float>(), (std::vector<float>{1, 1.25f, 1.5f, 1.75f}));
  EXPECT_EQ(arange(5, 0, -2, {DType::i32}).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{5, 3, 1}));
  EXPECT_EQ(arange(0, 10, 3, {DType::i32}).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{0, 3, 6, 9}));
  // Size ceil((stop - start) / step); an empty range is not an error.
  EXPECT_EQ(arange(0, 0).numel(), 0);
  EXPECT_EQ(arange(3, 1).numel(), 0);
  EXPECT_EQ(arange(0, 1, 0.3).numel(), 4);

  Tensor r = arange(-1, 1, 0.1, {DType::f64, cpu(1)});
  EXPECT_EQ(r.shape(), (Shape{20}));
  EXPECT_EQ(r.device(), cpu(1));
  std::vector<double> got = r.to_vector<double>();
  // Element i is start + i * step in double: the same expression here.
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], -1.0 + static_cast<double>(i) * 0.1);
}

TEST_P(CreationTest, FromVectorCopiesAtCallTime) {
  std::vector<double> v = random_values<double>(12, 1);
  const std::vector<double> expected = v;
  Tensor t = from_vector(v, Shape{3, 4}, cpu(1));
  std::fill(v.begin(), v.end(), 0.0);  // the tensor holds its own copy
  EXPECT_EQ(t.shape(), (Shape{3, 4}));
  EXPECT_EQ(t.dtype(), DType::f64);
  EXPECT_EQ(t.to_vector<double>(), expected);

  std::vector<std::int32_t> iv = random_values<std::int32_t>(7, 2, -100, 100);
  EXPECT_EQ(from_vector(iv).to_vector<std::int32_t>(), iv);
  std::vector<float> fv = random_values<float>(5, 3);
  EXPECT_EQ(from_vector(fv).to_vector<float>(), fv);
  EXPECT_TRUE(from_vector(std::vector<float>{}).to_vector<float>().empty());
}

TEST_P(CreationTest, RandMatchesPhiloxScheme) {
  const std::uint64_t seed = 42;
  std::vector<double> d = rand({1000}, {DType::f64}, {seed}).to_vector<double>();
  std::vector<float> f = rand({1000}, {DType::f32}, {seed}).to_vector<float>();
  for (std::size_t i = 0; i < d.size(); ++i) {
    EXPECT_EQ(d[i], uniform_ref(i, seed)) << i;
    EXPECT_EQ(f[i], static_cast<float>(uniform_ref(i, seed))) << i;
    EXPECT_GE(d[i], 0.0);
    EXPECT_LT(d[i], 1.0);
    EXPECT_LT(f[i], 1.0f);
  }
}

TEST_P(CreationTest, RandF32StaysBelowOne) {
  // Under seed 3, block 2350790 has 0xffffff97 as its first word (element
  // 4 * 2350790): in double that is within 2^-25 of 1, which would round to
  // 1.0f.
  const std::uint64_t counter = 4 * 2350790ull;
  ASSERT_GT(static_cast<float>(uniform_ref(counter, 3)), 0.99999994f);
  eng().manual_seed(3);
  eng().take_rng_offset(counter);
  float u = rand({1}).item<float>();
  EXPECT_LT(u, 1.0f);
  EXPECT_EQ(u, std::nextafter(1.0f, 0.0f));
}

TEST_P(CreationTest, RandnMatchesBoxMuller) {
  const std::uint64_t seed = 9;
  std::vector<double> d = randn({500}, {DType::f64}, {seed}).to_vector<double>();
  for (std::size_t i = 0; i < d.size(); ++i)
    // Same formula in double; 1e-12 leaves room for libm calls compiled
    // differently (inlined, constant-folded) here and in the kernel.
    EXPECT_NEAR(d[i], normal_ref(i, seed), 1e-12) << i;
}

// What f32 randn approximates for element j (normal_f32.h), in double: the
// radius of u = ((w1 >> 1) | 1) / 2^31 (the numerator rounded to float) and
// the angle q pi/2 + (f - 1/2) pi/2 of w2's top two bits q and next 22 f.
double normal_f32_ref(std::uint64_t j, std::uint64_t seed) {
  philox::Block b = philox::philox4x32_10(j / 4, seed);
  const std::uint64_t first = j % 4 / 2 * 2;
  const std::uint32_t w1 = b.v[first], w2 = b.v[first + 1];
  const double u = static_cast<float>(static_cast<std::int32_t>((w1 >> 1) | 1u)) / 2147483648.0;
  const double f = ((w2 >> 8) & 0x3fffffu) / 4194304.0;
  const double t = (w2 >> 30) * std::numbers::pi / 2 + (f - 0.5) * std::numbers::pi / 2;
  const double r = std::sqrt(-2.0 * std::log(u));
  return j % 2 == 0 ? r * std::cos(t) : r * std::sin(t);
}

TEST_P(CreationTest, RandnF32IsItsTransformToFloatPrecision) {
  // 2^18 + 3 elements: every lane, whole runs of the vectorised loop and a
  // partial block at the end. The float log and sine polynomials and their
  // roundings stay within 8 float ulps of a value near the radius's size.
  const std::int64_t n = (1 << 18) + 3;
  const std::uint64_t seed = 5;
  std::vector<float> z = randn({n}, {DType::f32}, {seed}).to_vector<float>();
  double worst = 0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    const double ref = normal_f32_ref(i, seed);
    const double err = std::abs(z[i] - ref) / std::max(1.0, std::abs(ref));
    worst = std::max(worst, err);
    ASSERT_LE(err, 8 * 0x1p-24) << "element " << i << ": " << z[i] << " against " << ref;
  }
  EXPECT_GT(worst, 0.0);  // float is no double: some element differs

  // Starting anywhere inside a block or a run gives the same elements.
  for (std::uint64_t skip : {1u, 2u, 3u, 5u, 255u, 257u, 1001u}) {
    eng().manual_seed(seed);
    eng().take_rng_offset(skip);
    std::vector<float> part = randn({3000}, {DType::f32}).to_vector<float>();
    for (std::size_t i = 0; i < part.size(); ++i)
      ASSERT_EQ(part[i], z[skip + i]) << "skip " << skip << " element " << i;
  }
}

TEST_P(CreationTest, RandnF32Distribution) {
  // 2^20 normals: moments, the two tails, and the angle of each pair spread
  // over 16 equal sectors (a quadrant or sign slip would empty some).
  const std::int64_t n = 1 << 20;
  std::vector<float> z = randn({n}, {DType::f32}, {77}).to_vector<float>();
  double s1 = 0, s2 = 0, s4 = 0;
  std::int64_t above2 = 0, below2 = 0;
  std::vector<std::int64_t> sector(16, 0);
  for (std::size_t i = 0; i < z.size(); ++i) {
    const double x = z[i];
    ASSERT_TRUE(std::isfinite(x)) << i;
    s1 += x;
    s2 += x * x;
    s4 += x * x * x * x;
    above2 += x > 2;
    below2 += x < -2;
    if (i % 2 == 0) {
      const double t = std::atan2(z[i + 1], z[i]) + std::numbers::pi;
      ++sector[std::min<std::size_t>(15, static_cast<std::size_t>(t / (2 * std::numbers::pi) * 16))];
    }
  }
  const double m = s1 / n, var = s2 / n - m * m, kurt = s4 / n / (var * var);
  // Standard errors at n = 2^20: mean 0.001, variance 0.0014, kurtosis 0.005.
  EXPECT_NEAR(m, 0.0, 0.006);
  EXPECT_NEAR(var, 1.0, 0.01);
  EXPECT_NEAR(kurt, 3.0, 0.04);
  // P(x > 2) = 0.02275: 23,856 expected, standard error about 153.
  EXPECT_NEAR(above2, 23856, 1000);
  EXPECT_NEAR(below2, 23856, 1000);
  for (std::int64_t c : sector) EXPECT_NEAR(c, n / 2 / 16, 1000);  // 32,768 each, error about 175
}

TEST_P(CreationTest, RandomStatistics) {
  const std::int64_t n = 100000;
  std::vector<double> u = rand({n}, {DType::f64}, {1}).to_vector<double>();
  std::vector<double> z = randn({n}, {DType::f64}, {2}).to_vector<double>();
  auto moments = [](const std::vector<double>& v) {
    double s = 0, s2 = 0;
    for (double x : v) s += x;
    double m = s / static_cast<double>(v.size());
    for (double x : v) s2 += (x - m) * (x - m);
    return std::pair{m, std::sqrt(s2 / static_cast<double>(v.size()))};
  };
  for (double x : u) ASSERT_TRUE(x >= 0.0 && x < 1.0) << x;
  // Standard error of the mean is 1/sqrt(12 n) ~ 0.001 (uniform), 1/sqrt(n)
  // ~ 0.003 (normal): 0.02 is far outside chance for a correct generator.
  auto [um, us] = moments(u);
  EXPECT_NEAR(um, 0.5, 0.02);
  EXPECT_NEAR(us, std::sqrt(1.0 / 12.0), 0.02);
  auto [zm, zs] = moments(z);
  EXPECT_NEAR(zm, 0.0, 0.02);
  EXPECT_NEAR(zs, 1.0, 0.02);
}

TEST_P(CreationTest, SeededRandomIsTheSameEverywhere) {
  const Shape shape{257};
  for (DType dt : {DType::f32, DType::f64}) {
    for (auto* op : {&rand, &randn}) {
      std::vector<double> ref = op(shape, {dt, cpu(0)}, {1234}, Loc::current()).to_vector<double>();
      EXPECT_EQ(op(shape, {dt, cpu(0)}, {1234}, Loc::current()).to_vector<double>(), ref);
      EXPECT_EQ(op(shape, {dt, cpu(1)}, {1234}, Loc::current()).to_vector<double>(), ref);
      for (StreamKind k : {StreamKind::copy, StreamKind::comm}) {
        StreamScope s(k);
        EXPECT_EQ(op(shape, {dt, cpu(1)}, {1234}, Loc::current()).to_vector<double>(), ref);
      }
      EXPECT_NE(op(shape, {dt, cpu(0)}, {1235}, Loc::current()).to_vector<double>(), ref);
    }
  }
}

TEST_P(CreationTest, UnseededCallsAdvanceTheOffset) {
  eng().manual_seed(7);
  std::vector<float> a = rand({64}).to_vector<float>();
  std::vector<float> b = rand({64}).to_vector<float>();
  EXPECT_NE(a, b);
  // The first call after manual_seed(s) is offset 0 under seed s; the
  // second starts where the first ended.
  EXPECT_EQ(a, rand({64}, {}, {7}).to_vector<float>());
  for (std::size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b[i], static_cast<float>(uniform_ref(64 + i, 7)));

  eng().manual_seed(7);
  EXPECT_EQ(rand({64}).to_vector<float>(), a);
  EXPECT_EQ(rand({64}).to_vector<float>(), b);

  // A refused call must not consume counters.
  eng().manual_seed(7);
  EXPECT_THROW(randn({64}, {DType::i32}), DTypeError);
  EXPECT_EQ(rand({64}).to_vector<float>(), a);
}

TEST_P(CreationTest, BadInputThrowsAndEnqueuesNothing) {
  EXPECT_REJECTED(DTypeError, rand({4}, {DType::i32}));
  EXPECT_REJECTED(DTypeError, randn({4}, {DType::i32}, {1}));
  EXPECT_REJECTED(DeviceError, zeros({4}, {DType::f32, cpu(2)}));
  EXPECT_REJECTED(DeviceError, rand({4}, {DType::f32, cpu(5)}));
  EXPECT_REJECTED(DeviceError, from_vector(std::vector<float>{1, 2}, cpu(9)));
  EXPECT_REJECTED(ShapeError, from_vector(std::vector<float>{1, 2, 3}, Shape{2, 2}));
  EXPECT_REJECTED(ValueError, arange(0, 1, 0));
  EXPECT_REJECTED(ValueError, arange(0, std::numeric_limits<double>::infinity()));
  EXPECT_REJECTED(ValueError, arange(0, 4e9, 1e9, {DType::i32}));  // its last value, 3e9, is no i32
  EXPECT_REJECTED(ValueError, full({2}, 3e9, {DType::i32}));
  EXPECT_REJECTED(ValueError, full({2}, std::nan(""), {DType::i32}));
  EXPECT_REJECTED(ShapeError, zeros({2, -1}));
}

TEST_P(CreationTest, Blockers) {
  Tensor t = from_vector(std::vector<float>{1.5f, -2.25f, 3.0f}, Shape{3});
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{1.5, -2.25, 3.0}));
  EXPECT_EQ(sum(t).item<float>(), 2.25f);
  EXPECT_THROW(t.item<float>(), ShapeError);

  std::ostringstream os;
  os << t;
  EXPECT_NE(os.str().find("1.5"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("-2.25"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("[3]"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("f32"), std::string::npos) << os.str();

  Stats s = eng().stats();
  EXPECT_GE(s.blockers, 3u);  // to_vector, item, print (item's ShapeError does not block)
}

TEST(CreationNoEngine, OpsNeedACurrentEngine) {
  ASSERT_EQ(current_engine_or_null(), nullptr);
  EXPECT_THROW(zeros({2}), UsageError);
  EXPECT_THROW(rand({2}), UsageError);
  EXPECT_THROW(from_vector(std::vector<float>{1}), UsageError);
}

// Engines of each kind in turn give bitwise the same random tensors.
TEST(CreationAcrossEngines, SeededAndUnseededRandomMatch) {
  std::vector<std::vector<double>> results;
  for (EngineKind kind : {EngineKind::async, EngineKind::naive}) {
    EngineOptions opts;
    opts.kind = kind;
    opts.cpu_devices = 2;
    auto eng = Engine::create(opts);
    EngineScope scope(*eng);
    eng->manual_seed(11);
    Tensor a = randn({300}, {DType::f64, cpu(1)});
    Tensor b = rand({300}, {DType::f32}, {99});
    Tensor c = rand({300}, {DType::f64});
    std::vector<double> all = a.to_vector<double>();
    for (const Tensor* t : {&b, &c}) {
      std::vector<double> v = t->to_vector<double>();
      all.insert(all.end(), v.begin(), v.end());
    }
    results.push_back(std::move(all));
  }
  EXPECT_EQ(results[0], results[1]);
}

}  // namespace
}  // namespace tide::testing
