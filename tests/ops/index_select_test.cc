// index_select and index_add on the CPU, both engines: against a reference
// loop for every dtype, both index dtypes and every axis of a 3-d tensor,
// with repeated and empty indices; an out-of-range index failing its op at
// the barrier; refusals before anything is queued; and on a GPU the same
// against the CPU (skipped without one).
#include <limits>
#include <string>

#include <tide/ops/autograd.h>

#include "cuda_ops_test_util.h"

namespace tide::testing {
namespace {

using IndexSelectTest = OpsTest;
TIDE_OPS_TEST_SUITE(IndexSelectTest);

/// [outer, len, inner] around `axis` of `s`.
struct Dims {
  std::int64_t outer = 1, len = 1, inner = 1;
};
Dims dims(const Shape& s, int axis) {
  Dims d;
  d.len = s[axis];
  for (int i = 0; i < axis; ++i) d.outer *= s[i];
  for (int i = axis + 1; i < s.ndim(); ++i) d.inner *= s[i];
  return d;
}

template <typename T>
std::vector<T> select_reference(const std::vector<T>& a, const Shape& s, int axis, const std::vector<std::int64_t>& idx) {
  const Dims d = dims(s, axis);
  std::vector<T> r;
  for (std::int64_t o = 0; o < d.outer; ++o)
    for (std::int64_t i : idx)
      for (std::int64_t j = 0; j < d.inner; ++j) r.push_back(a[static_cast<std::size_t>((o * d.len + i) * d.inner + j)]);
  return r;
}

template <typename T>
std::vector<T> add_reference(std::vector<T> a, const Shape& s, int axis, const std::vector<std::int64_t>& idx,
                             const std::vector<T>& src) {
  const Dims d = dims(s, axis);
  const auto count = static_cast<std::int64_t>(idx.size());
  for (std::int64_t o = 0; o < d.outer; ++o)
    for (std::int64_t i = 0; i < count; ++i)
      for (std::int64_t j = 0; j < d.inner; ++j)
        a[static_cast<std::size_t>((o * d.len + idx[static_cast<std::size_t>(i)]) * d.inner + j)] +=
            src[static_cast<std::size_t>((o * count + i) * d.inner + j)];
  return a;
}

Tensor index_tensor(const std::vector<std::int64_t>& idx, DType dt, Device dev) {
  std::vector<std::int64_t> v = idx;
  Tensor t = from_vector(v, Shape{static_cast<std::int64_t>(v.size())}, dev);
  return dt == DType::i64 ? t : to_dtype(t, dt);
}

template <typename F>
void for_each_value_dtype(F f) {
  for_each_dtype_of(f);
  f(std::int64_t{});
}

TEST_P(IndexSelectTest, MatchesTheReferenceAlongEveryAxis) {
  const Shape s{3, 4, 5};
  const std::vector<std::vector<std::int64_t>> indices = {{0}, {2, 0, 2, 1}, {}, {1, 1, 1}};
  for_each_value_dtype([&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> a = random_values<T>(static_cast<std::size_t>(s.numel()), 11, -50, 50);
    const Tensor ta = from_vector(a, s);
    for (DType it : {DType::i32, DType::i64})
      for (int axis = 0; axis < 3; ++axis)
        for (const auto& raw : indices) {
          std::vector<std::int64_t> idx;
          for (std::int64_t i : raw) idx.push_back(i % s[axis]);
          const std::string what = std::string(dtype_name(dtype_v<T>)) + " index " + dtype_name(it) + " axis " +
                                   std::to_string(axis) + " count " + std::to_string(idx.size());
          const Tensor ti = index_tensor(idx, it, cpu(0));
          const Tensor got = index_select(ta, axis, ti);
          std::vector<std::int64_t> want_shape(s.begin(), s.end());
          want_shape[static_cast<std::size_t>(axis)] = static_cast<std::int64_t>(idx.size());
          EXPECT_EQ(got.shape(), Shape(want_shape.begin(), want_shape.end())) << what;
          EXPECT_EQ(got.to_vector<T>(), select_reference(a, s, axis, idx)) << what;
          // index_add of the selected slices, times 2, back onto a.
          const Tensor src = got * 2;
          const std::vector<T> src_v = src.to_vector<T>();
          EXPECT_EQ(index_add(ta, axis, ti, src).to_vector<T>(), add_reference(a, s, axis, idx, src_v)) << what;
          EXPECT_EQ(ta.to_vector<T>(), a) << what << ": index_add changed its input";
        }
  });
}

TEST_P(IndexSelectTest, AZeroDimensionalIndexKeepsTheAxisWithExtentOne) {
  const Tensor a = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const Tensor i = from_vector(std::vector<std::int64_t>{2}, Shape{});
  const Tensor r = index_select(a, 1, i);
  EXPECT_EQ(r.shape(), (Shape{2, 1}));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(index_select(a, -2, reshape(i, {1}) * 0).to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST_P(IndexSelectTest, AnIndexOutOfRangeFailsItsOpAtTheBarrier) {
  const Tensor a = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  for (std::int64_t bad : {3, -1}) {
    const Tensor i = from_vector(std::vector<std::int64_t>{0, bad}, Shape{2});
    const Tensor r = index_select(a, 1, i);
    try {
      r.wait_to_read();
      FAIL() << "no error for index " << bad;
    } catch (const BackendError& e) {
      EXPECT_EQ(e.provenance().op, "index_select");
      const std::string what = e.what();
      EXPECT_NE(what.find("index " + std::to_string(bad) + " (at position 1"), std::string::npos) << what;
      EXPECT_NE(what.find("length 3"), std::string::npos) << what;
    }
    const Tensor src = from_vector(std::vector<float>{1, 1, 1, 1}, Shape{2, 2});
    EXPECT_THROW(index_add(a, 1, i, src).wait_to_read(), BackendError);
  }
  // The engine stays usable.
  EXPECT_EQ(index_select(a, 0, from_vector(std::vector<std::int32_t>{1}, Shape{1})).to_vector<float>(),
            (std::vector<float>{4, 5, 6}));
}

TEST_P(IndexSelectTest, RefusesBadArgumentsBeforeQueuingAnything) {
  const Tensor a = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const Tensor i = from_vector(std::vector<std::int64_t>{0, 1}, Shape{2});
  const Tensor float_index = to_dtype(i, DType::f32), matrix_index = reshape(i, {1, 2}),
               other_device = from_vector(std::vector<std::int64_t>{0, 1}, Shape{2}, cpu(1)),
               a64 = to_dtype(a, DType::f64);
  const std::uint64_t before = pushed();
  EXPECT_THROW(index_select(a, 1, float_index), DTypeError);
  EXPECT_THROW(index_select(a, 1, matrix_index), ShapeError);
  EXPECT_THROW(index_select(a, 2, i), ShapeError);
  EXPECT_THROW(index_select(a, 1, other_device), DeviceError);
  EXPECT_THROW(index_add(a, 1, i, a), ShapeError);  // src needs extent 2 along axis 1
  EXPECT_THROW(index_add(a, 0, i, a64), DTypeError);
  EXPECT_THROW(index_select(Tensor(), 0, i), UndefinedTensorError);
  EXPECT_EQ(pushed(), before);
}

TEST_P(IndexSelectTest, GradientsFlowBothWays) {
  const Tensor a = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{3, 2}).set_requires_grad();
  const Tensor i = from_vector(std::vector<std::int64_t>{2, 0, 2}, Shape{3});
  backward(sum(index_select(a, 0, i) * 2.0));
  // Rows 2 (twice) and 0 (once) were taken.
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{2, 2, 0, 0, 4, 4}));
  const Tensor b = from_vector(std::vector<double>{0, 0, 0, 0, 0, 0}, Shape{3, 2}).set_requires_grad();
  const Tensor src = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{3, 2}).set_requires_grad();
  const Tensor w = from_vector(std::vector<double>{1, 10, 100, 1000, 1e4, 1e5}, Shape{3, 2});
  backward(sum(index_add(b, 0, i, src) * w));
  EXPECT_EQ(b.grad().to_vector<double>(), w.to_vector<double>());
  // src row r went to row i[r] of the output: its gradient is w's row i[r].
  EXPECT_EQ(src.grad().to_vector<double>(), (std::vector<double>{1e4, 1e5, 1, 10, 1e4, 1e5}));
}

using CudaIndexSelectTest = ::testing::TestWithParam<EngineKind>;
TIDE_OPS_TEST_SUITE(CudaIndexSelectTest);

TEST_P(CudaIndexSelectTest, MatchesTheCpu) {
  TIDE_REQUIRE_GPU();
  GpuEngine eng(GetParam());
  const Shape s{33, 70, 9};
  for_each_value_dtype([&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> a = random_values<T>(static_cast<std::size_t>(s.numel()), 5, -50, 50);
    const Tensor ca = from_vector(a, s), ga = to_gpu(a, s);
    for (DType it : {DType::i32, DType::i64})
      for (int axis = 0; axis < 3; ++axis) {
        std::vector<std::int64_t> idx;
        for (std::int64_t k = 0; k < 2 * s[axis]; ++k) idx.push_back((k * 7 + 3) % s[axis]);  // repeats
        const std::string what = std::string(dtype_name(dtype_v<T>)) + " axis " + std::to_string(axis);
        const Tensor ci = index_tensor(idx, it, cpu(0)), gi = index_tensor(idx, it, cuda(0));
        const Tensor cs = index_select(ca, axis, ci), gs = index_select(ga, axis, gi);
        EXPECT_EQ(gs.device(), cuda(0)) << what;
        EXPECT_EQ(gs.to_vector<T>(), cs.to_vector<T>()) << what;
        // Integer sums are exact in any order; the GPU's float sums go
        // through atomics in no fixed order: each element adds two terms
        // of at most 50 to one, within a few ulps of 150.
        const std::vector<T> got = index_add(ga, axis, gi, gs).to_vector<T>(),
                             want = index_add(ca, axis, ci, cs).to_vector<T>();
        if constexpr (std::is_integral_v<T>) {
          EXPECT_EQ(got, want) << what;
        } else {
          ASSERT_EQ(got.size(), want.size()) << what;
          for (std::size_t k = 0; k < got.size(); ++k)
            EXPECT_NEAR(got[k], want[k], 4 * 150 * std::numeric_limits<T>::epsilon()) << what << " at " << k;
        }
      }
  });
}

}  // namespace
}  // namespace tide::testing
