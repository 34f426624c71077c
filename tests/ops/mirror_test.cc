// as_strided's mirrors: views of elements that are not one run (a column,
// a transpose, a step), kept equal to their source by one copy op after
// each write to either side, in stream order. A random program of writes
// through a block, mirrors, mirrors of mirrors and views of mirrors is
// checked against a host model; then what each write costs, lifetimes,
// refusals and autograd.
#include <tide/core/mirror.h>
#include <tide/ops/autograd.h>
#include <tide/ops/optim.h>
#include <tide/ops/reduction.h>

#include "mirror_program.h"
#include "ops_test_util.h"

namespace tide::testing {
namespace {

using MirrorTest = OpsTest;
TIDE_OPS_TEST_SUITE(MirrorTest);

TEST_P(MirrorTest, ARandomProgramOfWritesMatchesAHostModel) {
  for (std::uint32_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    run_mirror_program(cpu(0), seed, 150);
    if (HasFatalFailure()) return;
  }
}

TEST_P(MirrorTest, OneRunIsAPlainViewAndReachingAnElementTwiceIsRefused) {
  Tensor m = from_vector(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  Tensor row = as_strided(m, {4}, {1}, 4);
  EXPECT_TRUE(row.is_same(m));
  EXPECT_FALSE(is_mirror(row));
  Tensor col = as_strided(m, {3}, {4}, 1);
  EXPECT_FALSE(col.is_same(m));
  EXPECT_TRUE(is_mirror(col));
  EXPECT_TRUE(is_mirror(reshape(col, {3, 1})));  // a view of a mirror
  EXPECT_EQ(col.to_vector<float>(), (std::vector<float>{1, 5, 9}));
  EXPECT_REJECTED(ShapeError, as_strided(m, {3, 4}, {0, 1}, 0));   // every row is row 0
  EXPECT_REJECTED(ShapeError, as_strided(m, {2, 3}, {1, 1}, 0));   // overlapping axes
  EXPECT_REJECTED(ShapeError, as_strided(m, {3}, {4}, 9));         // outside
  EXPECT_EQ(as_strided(m, {0, 4}, {1, 3}, 0).numel(), 0);
}

TEST_P(MirrorTest, IsMirrorOfKnowsTheExactPickOfItsSource) {
  Tensor m = from_vector(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  Tensor other = from_vector(std::vector<float>(12, 0.0f), {3, 4});
  Tensor col = as_strided(m, {3}, {4}, 1);
  EXPECT_TRUE(is_mirror_of(col, m, {3}, {4}, 1));
  EXPECT_FALSE(is_mirror_of(col, m, {3}, {4}, 2));                   // another column
  EXPECT_FALSE(is_mirror_of(col, m, {2}, {4}, 1));                   // part of it
  EXPECT_FALSE(is_mirror_of(col, other, {3}, {4}, 1));               // another tensor's pick
  EXPECT_FALSE(is_mirror_of(reshape(col, {3, 1}), m, {3}, {4}, 1));  // a view of the mirror
  Tensor row = as_strided(m, {4}, {1}, 4);  // one run: a view, no mirror
  EXPECT_FALSE(is_mirror_of(row, m, {4}, {1}, 4));
  EXPECT_FALSE(is_mirror_of(Tensor(), m, {3}, {4}, 1));
}

TEST_P(MirrorTest, APickOfAMirrorFollowsTheFirstBlockWhereItCan) {
  Tensor m = from_vector(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  Tensor t = as_strided(m, {4, 3}, {1, 4}, 0);
  Tensor tt = as_strided(t, {3, 4}, {1, 3}, 0);  // the transpose's transpose: a view of m
  EXPECT_FALSE(is_mirror(tt));
  EXPECT_TRUE(tt.is_same(m));
  Tensor col = as_strided(t, {4}, {3}, 1);  // a column of the transpose: row 1 of m, a view of it
  EXPECT_TRUE(col.is_same(m));
  EXPECT_EQ(col.to_vector<float>(), (std::vector<float>{4, 5, 6, 7}));
  Tensor back = as_strided(t, {3}, {-3}, 6);  // rows 2, 1, 0 of the transpose's column 0 (m[0, 2..0])
  ASSERT_TRUE(is_mirror(back));
  EXPECT_EQ(mirror_of(*back.storage())->source(), m.storage());
  EXPECT_EQ(back.to_vector<float>(), (std::vector<float>{2, 1, 0}));
  Tensor carry = as_strided(t, {2}, {5}, 0);  // elements 0 and 5 of t cross its rows: no pick of m
  ASSERT_TRUE(is_mirror(carry));
  EXPECT_EQ(mirror_of(*carry.storage())->source(), t.storage());
  EXPECT_EQ(carry.to_vector<float>(), (std::vector<float>{0, 9}));
  // x = x.T over and over keeps one mirror of m alive, not a chain.
  Tensor x = m;
  for (int i = 0; i < 51; ++i) x = as_strided(x, {x.shape()[1], x.shape()[0]}, {1, x.shape()[1]}, 0);
  EXPECT_TRUE(is_mirror(x));
  int live = 0;
  for (const auto& f : m.storage()->var().followers) live += !f.expired();
  EXPECT_EQ(live, 3);  // t, back and x (carry follows t)
  add_(m, 1.0);
  EXPECT_EQ(x.to_vector<float>(), as_strided(m, {4, 3}, {1, 4}, 0).to_vector<float>());
  // Gradients flow through the composed pick to the mirror it was taken of.
  Tensor w = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}).set_requires_grad();
  Tensor wt = as_strided(w, {3, 2}, {1, 3}, 0);
  Tensor picked_back = as_strided(wt, {2}, {-2}, 3);  // wt[1, 1], wt[0, 1]... elements 3 and 1 of wt
  backward(sum(picked_back * picked_back));
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{0, 0, 0, 8, 10, 0}));
}

TEST_P(MirrorTest, EachWriteCostsOneCopyPerMirrorItReaches) {
  Tensor m = zeros({4, 4});
  std::uint64_t before = pushed();
  add_(m, 1.0);
  EXPECT_EQ(pushed() - before, 1u);  // no mirror: the op alone
  Tensor col = as_strided(m, {4}, {4}, 0);
  Tensor t = as_strided(m, {4, 4}, {1, 4}, 0);
  before = pushed();
  add_(m, 1.0);
  EXPECT_EQ(pushed() - before, 3u);  // the op, a pull into each mirror
  before = pushed();
  add_(col, 1.0);
  EXPECT_EQ(pushed() - before, 3u);  // the op, the write-back, the other mirror's pull
  EXPECT_EQ(col.to_vector<float>(), (std::vector<float>{3, 3, 3, 3}));
  EXPECT_EQ(select(t, 0, 0).to_vector<float>(), (std::vector<float>{3, 3, 3, 3}));
  EXPECT_EQ(select(t, 1, 0).to_vector<float>(), (std::vector<float>{3, 2, 2, 2}));
  col = Tensor();
  t = Tensor();
  before = pushed();
  add_(m, 1.0);
  EXPECT_EQ(pushed() - before, 1u);  // dropped mirrors cost nothing
  EXPECT_TRUE(m.storage()->var().followers.empty());
}

TEST_P(MirrorTest, AMirrorKeepsItsSourceAliveAndStillWritesIt) {
  Tensor col;
  {
    Tensor m = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
    col = as_strided(m, {2}, {2}, 1);
  }
  add_(col, 10.0);
  EXPECT_EQ(col.to_vector<float>(), (std::vector<float>{12, 14}));
  const Mirror* mirror = mirror_of(*col.storage());
  ASSERT_NE(mirror, nullptr);
  EXPECT_EQ(Tensor(mirror->source(), {2, 2}, DType::f32).to_vector<float>(), (std::vector<float>{1, 12, 3, 14}));
}

TEST_P(MirrorTest, AutogradThroughAMirrorAndItsWriteCount) {
  Tensor x = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}).set_requires_grad();
  Tensor col = as_strided(x, {2}, {3}, 2);
  EXPECT_TRUE(col.requires_grad());
  backward(sum(col * col));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 6, 0, 0, 12}));
  // In place on a mirror that needs a gradient is refused while recording.
  EXPECT_REJECTED(UsageError, add_(col, 1.0));
  // A mirror saved for a backward is pulled when its source is written:
  // the backward then refuses to run, as for a view sharing the storage.
  Tensor w = from_vector(std::vector<double>{1, 1}, {2}).set_requires_grad();
  Tensor base = from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2});
  Tensor saved = as_strided(base, {2}, {2}, 0);
  Tensor y = sum(w * saved);
  {
    NoGradGuard off;
    add_(base, 1.0);
  }
  EXPECT_REJECTED(UsageError, backward(y));
  // Grad mode off: a write through the mirror of a leaf reaches the leaf.
  {
    NoGradGuard off;
    Tensor c0 = as_strided(x, {2}, {3}, 0);
    mul_(c0, 0.0);
  }
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{0, 2, 3, 0, 5, 6}));
}

TEST_P(MirrorTest, AnOpWritingTwoMirrorsOfOneBlockKeepsBothWrites) {
  // An optimizer step whose parameter and velocity are two columns of one
  // block: both write-backs land before either column is pulled again.
  Tensor s = zeros({3, 2});
  Tensor p = as_strided(s, {3}, {2}, 0), v = as_strided(s, {3}, {2}, 1);
  Tensor p_alone = zeros({3}), v_alone = zeros({3});
  const Tensor g = from_vector(std::vector<float>{1, 2, 3}, {3});
  for (int i = 0; i < 2; ++i) {
    sgd_step_(p, g, v, {.lr = 0.5, .momentum = 0.9});
    sgd_step_(p_alone, g, v_alone, {.lr = 0.5, .momentum = 0.9});
  }
  EXPECT_EQ(p.to_vector<float>(), p_alone.to_vector<float>());
  EXPECT_EQ(v.to_vector<float>(), v_alone.to_vector<float>());
  const std::vector<float> pv = p_alone.to_vector<float>(), vv = v_alone.to_vector<float>();
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{pv[0], vv[0], pv[1], vv[1], pv[2], vv[2]}));
}

TEST_P(MirrorTest, AWriteBackDoesNotClearItsSourcesPoison) {
  Tensor t = zeros({2, 2}, {DType::i32});
  Tensor col = as_strided(t, {2}, {2}, 0);
  copy_(t, reshape(div(ones({4}, {DType::i32}), zeros({4}, {DType::i32})), {2, 2}));  // fails on the backend
  copy_(col, full({2}, 5, {DType::i32}));  // a good write of the whole mirror: its own poison goes
  EXPECT_EQ(col.to_vector<std::int32_t>(), (std::vector<std::int32_t>{5, 5}));
  EXPECT_THROW(t.to_vector<std::int32_t>(), BackendError);  // column 1 is still the failed op's
  copy_(t, full({2, 2}, 7, {DType::i32}));
  EXPECT_EQ(col.to_vector<std::int32_t>(), (std::vector<std::int32_t>{7, 7}));
  eng().wait_all();
}

}  // namespace
}  // namespace tide::testing
