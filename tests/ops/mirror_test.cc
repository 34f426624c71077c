// as_strided's mirrors: views of elements that are not one run (a column,
// a transpose, a step), kept equal to their source by one copy op after
// each write to either side, in stream order. A random program of writes
// through a block, mirrors, mirrors of mirrors and views of mirrors is
// checked against a host model; then what each write costs, lifetimes,
// refusals, autograd, and the optimizers' lists of mirrors.
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

/// Whether sgd_step_ over `params` (gradients of ones where none are given,
/// zero velocities, lr 0.5) refuses the list with a ValueError whose
/// message holds `why`, pushing nothing.
bool step_refused(std::vector<Tensor> params, std::vector<Tensor> grads = {}, const char* why = "share memory") {
  std::vector<Tensor> velocities;
  for (const Tensor& p : params) {
    if (grads.size() < params.size()) grads.push_back(ones(p.shape()));
    velocities.push_back(zeros(p.shape()));
  }
  Engine& e = params.front().engine();
  const std::uint64_t before = e.stats().ops_pushed;
  try {
    sgd_step_(params, grads, velocities, {.lr = 0.5});
  } catch (const ValueError& err) {
    EXPECT_NE(std::string(err.what()).find(why), std::string::npos) << err.what();
    EXPECT_EQ(e.stats().ops_pushed, before) << "a refused step pushed ops";
    return true;
  }
  return false;
}

TEST_P(MirrorTest, AnOptimizerListCountsAMirrorAsTheElementsItFollows) {
  // The steps over lists refuse two entries sharing memory that one of them
  // writes. A mirror is a block of its own, but what it shares is the
  // elements of its source it follows; and a mirror of a mirror, written,
  // is written back whole into the mirror it follows.
  Tensor m = from_vector(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  Tensor t = as_strided(m, {4, 3}, {1, 4}, 0);  // m's transpose
  Tensor c1 = as_strided(m, {3}, {4}, 1), c2 = as_strided(m, {3}, {4}, 2);  // columns 1 and 2
  Tensor carry = as_strided(t, {2}, {5}, 0);  // a mirror of t: m's elements 0 and 9
  Tensor row0 = slice(m, 0, 0, 1), row1 = slice(m, 0, 1, 2), row2 = slice(m, 0, 2, 3);
  ASSERT_TRUE(is_mirror(t) && is_mirror(c1) && is_mirror(carry));
  ASSERT_EQ(mirror_of(*carry.storage())->source(), t.storage());
  EXPECT_TRUE(step_refused({m, t})) << "a parameter and its transpose";
  EXPECT_TRUE(step_refused({t, m})) << "the same, the other way round";
  EXPECT_TRUE(step_refused({t, c1})) << "two mirrors of one block that share column 1";
  EXPECT_TRUE(step_refused({c1, row1})) << "a column and a row crossing it";
  EXPECT_TRUE(step_refused({c2, reshape(t, {12})})) << "a column and a view of the transpose";
  EXPECT_TRUE(step_refused({row0, carry})) << "a row and a mirror of a mirror reaching into it (m[0, 0])";
  EXPECT_TRUE(step_refused({row1, carry})) << "writing the mirror of a mirror writes all of t back into m";
  EXPECT_TRUE(step_refused({row2, zeros({2})}, {ones({1, 4}), carry})) << "a gradient read from m[2, 1]";
  // Disjoint picks of one block are entries of their own, and each step
  // reaches the block through its mirror; a mirror of a mirror read as a
  // gradient reads only its own elements.
  EXPECT_FALSE(step_refused({c1, c2})) << "two columns";
  EXPECT_FALSE(step_refused({row1, zeros({2})}, {ones({1, 4}), carry})) << "a gradient read from m[0, 0] and m[2, 1]";
  // Nor may one parameter's state share an element with it.
  const Tensor g3 = ones({3});
  Tensor crossing = slice(reshape(m, {12}), 0, 4, 7);  // m[1, 0..2]: m[1, 1] is in column 1
  EXPECT_THROW(sgd_step_(c1, g3, crossing, {.lr = 0.5, .momentum = 0.9}), ValueError);
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{0, 0.5f, 1.5f, 3, 3.5f, 4, 5, 6.5f, 8, 8.5f, 9.5f, 11}));
}

TEST_P(MirrorTest, AnOptimizerMayWriteDisjointPartsOfOneTreeOfMirrors) {
  Tensor m = from_vector(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  Tensor t = as_strided(m, {4, 3}, {1, 4}, 0);
  Tensor carry = as_strided(t, {2}, {5}, 0);  // m[0], m[9]
  // Two parts of one mirror's block: the block is written back once.
  EXPECT_FALSE(step_refused({slice(carry, 0, 0, 1), slice(carry, 0, 1, 2)}));
  // Two mirrors of one mirror, disjoint there: each is written back into t
  // before t is written back whole.
  Tensor r = reshape(t, {2, 6});
  Tensor sib0 = as_strided(r, {2}, {6}, 0), sib1 = as_strided(r, {2}, {6}, 1);  // m[0], m[2]; m[4], m[6]
  ASSERT_TRUE(is_mirror(sib0) && is_mirror(sib1));
  ASSERT_EQ(mirror_of(*sib0.storage())->source()->owner(), t.storage().get());
  EXPECT_FALSE(step_refused({sib0, sib1}));
  // A mirror of a mirror written beside a gradient read from m elsewhere:
  // the write-backs after the op rewrite only values that did not change.
  Tensor x = zeros({2});
  Tensor velocity = carry;  // momentum 0: the velocity becomes the gradient, m[4] and m[5]
  EXPECT_NO_THROW(sgd_step_(x, slice(reshape(m, {12}), 0, 4, 6), velocity, {.lr = 0.5}));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{-1.75f, -2.5f}));
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{3.5f, 1, 1.5f, 3, 3.5f, 5, 5.5f, 7, 8, 5, 10, 11}));
}

TEST_P(MirrorTest, AListWritingPartOfAMirrorAndAnotherBlockOfItsTreeIsRefusedWhole) {
  // The engine writes a mirror back whole, so it refuses an op that writes
  // part of one and another block of its tree. A list refuses it up front,
  // even where the two fall in different ops (16 parameters per op), so
  // that no op of the step is pushed.
  // Here no element is written twice: column 1's write-back rewrites m[9]
  // with the value it has.
  Tensor m = from_vector(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  Tensor c1 = as_strided(m, {3}, {4}, 1);
  Tensor part = slice(c1, 0, 0, 2);                  // m[1], m[5] of column 1's m[1], m[5], m[9]
  Tensor other = slice(reshape(m, {12}), 0, 2, 4);  // m[2], m[3]
  const char* why = "writes part of a mirror";
  EXPECT_TRUE(step_refused({part, other}, {}, why));
  // Where the whole write-back does land on the other's elements, the two
  // share memory (row 1 of the transpose, whose write-back rewrites all of
  // m, and m[2], m[3]).
  Tensor t = as_strided(m, {4, 3}, {1, 4}, 0);
  EXPECT_TRUE(step_refused({slice(t, 0, 1, 2), slice(reshape(m, {12}), 0, 2, 4)}));
  // In different ops: part in the first 16, other in the second.
  std::vector<Tensor> many{part};
  for (int i = 0; i < 16; ++i) many.push_back(zeros({2}));
  many.push_back(other);
  EXPECT_TRUE(step_refused(many, {}, why));
  for (int i = 1; i <= 16; ++i) EXPECT_EQ(many[static_cast<std::size_t>(i)].to_vector<float>(), (std::vector<float>{0, 0}));
  // The engine refuses an op with part of a mirror and two blocks of one
  // tree even where they are two trees: so does the list, up front.
  Tensor n = from_vector(std::vector<float>{0, 1, 2, 3}, {2, 2});
  std::vector<Tensor> trees;
  for (int i = 0; i < 16; ++i) trees.push_back(zeros({2}));
  trees.push_back(part);
  trees.push_back(as_strided(n, {2}, {2}, 0));
  trees.push_back(as_strided(n, {2}, {2}, 1));
  EXPECT_TRUE(step_refused(trees, {}, why));
  EXPECT_EQ(n.to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  // Part of a mirror beside a block of another tree is written as usual.
  EXPECT_FALSE(step_refused({part, zeros({2})}));
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{0, 0.5f, 2, 3, 4, 4.5f, 6, 7, 8, 9, 10, 11}));
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
