// Slices and selections that pick one run of consecutive elements are views
// of part of their base's storage: they share its bytes, its ordering, its
// write count and its lifetime; those that do not are copies. In-place ops
// whose operand overlaps the target in part read a copy of the operand.
#include <numeric>
#include <string>

#include <tide/ops/autograd.h>
#include <tide/ops/optim.h>
#include <tide/ops/reduction.h>
#include <tide/ops/views.h>

#include "ops_test_util.h"

namespace tide::testing {
namespace {

using PartViewsTest = OpsTest;
TIDE_OPS_TEST_SUITE(PartViewsTest);

std::vector<float> iota(std::int64_t n, float from = 0.0f) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), from);
  return v;
}

TEST_P(PartViewsTest, RowsAndLeadingSlicesAreViewsThatWriteTheBase) {
  Tensor m = from_vector(iota(12), {3, 4});
  const std::uint64_t held = cpu_memory_in_use(0);
  Tensor row = select(m, 0, 1);
  Tensor rows = slice(m, 0, 1, 3);
  Tensor part = slice(row, 0, 1, 3);  // a view of a view
  Tensor one = select(row, 0, 3);     // a single element
  EXPECT_EQ(cpu_memory_in_use(0), held);  // no new bytes
  for (const Tensor* v : {&row, &rows, &part, &one}) {
    EXPECT_TRUE(v->is_same(m));
    EXPECT_TRUE(v->storage()->is_view());
  }
  EXPECT_EQ(part.storage()->offset(), 5 * sizeof(float));
  EXPECT_EQ(row.to_vector<float>(), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(rows.to_vector<float>(), iota(8, 4));
  EXPECT_EQ(part.to_vector<float>(), (std::vector<float>{5, 6}));
  EXPECT_EQ(one.item<float>(), 7.0f);
  add_(part, 100.0);  // through the view of a view
  mul_(one, -1.0);
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 105, 106, -7, 8, 9, 10, 11}));
  // Reads of the base see the writes through views pushed before them, and
  // the views see a write to the base pushed before their reads.
  add_(m, 1.0);
  EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{5, 106, 107, -6, 9, 10, 11, 12}));
}

TEST_P(PartViewsTest, PicksThatAreNotOneRunAreCopies) {
  Tensor m = from_vector(iota(12), {3, 4});
  Tensor col = select(m, 1, 2);
  Tensor every_other = slice(m, 0, 0, 3, 2);
  Tensor inner = slice(m, 1, 1, 3);
  Tensor t = transpose(m);
  for (Tensor* c : {&col, &every_other, &inner, &t}) {
    EXPECT_FALSE(c->is_same(m));
    add_(*c, 1000.0);
  }
  EXPECT_EQ(m.to_vector<float>(), iota(12));  // the base unchanged
  EXPECT_EQ(col.to_vector<float>(), (std::vector<float>{1002, 1006, 1010}));
  // Moving an axis of extent 1 keeps the order: a view, and the whole
  // storage is shared without a new one.
  Tensor r = from_vector(iota(4), {1, 4});
  Tensor rt = transpose(r);
  EXPECT_EQ(rt.shape(), (Shape{4, 1}));
  EXPECT_EQ(rt.storage(), r.storage());
  EXPECT_EQ(slice(m, 0, 0, 3).storage(), m.storage());  // the whole of it
  EXPECT_EQ(slice(m, 0, 3, 3).numel(), 0);               // empty: a tensor of its own
  EXPECT_FALSE(slice(m, 0, 3, 3).is_same(m));
}

TEST_P(PartViewsTest, AssignmentAlongStridesWritesOnlyThePickedElements) {
  // A column, every other row reversed, and a 3-d block: against the same
  // writes into a host vector.
  struct Case {
    Shape base, picked;
    std::vector<std::int64_t> strides;
    std::int64_t offset;
  };
  const std::vector<Case> cases = {
      {{3, 4}, {3}, {4}, 1},                // t[:, 1]
      {{5, 4}, {3, 4}, {-8, 1}, 16},        // t[::-2]
      {{2, 3, 4}, {2, 2, 2}, {12, 4, 2}, 5}, // t[:, 1:3, 1::2]
      {{6}, {0}, {1}, 0},                   // nothing picked
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.base.str() + " -> " + c.picked.str());
    Tensor t = from_vector(iota(c.base.numel()), c.base);
    std::vector<float> want = iota(c.base.numel());
    const std::vector<float> v = iota(c.picked.numel(), 100.0f);
    for (std::int64_t i = 0; i < c.picked.numel(); ++i) {
      std::int64_t rest = i, at = c.offset;
      for (int d = c.picked.ndim() - 1; d >= 0; --d) {
        at += (rest % c.picked[d]) * c.strides[static_cast<std::size_t>(d)];
        rest /= c.picked[d];
      }
      want[static_cast<std::size_t>(at)] = v[static_cast<std::size_t>(i)];
    }
    assign_strided_(t, c.picked, c.strides, c.offset, from_vector(v, c.picked));
    EXPECT_EQ(t.to_vector<float>(), want);
  }
  // A value read from t itself is read before anything is written.
  Tensor t = from_vector(iota(6), {2, 3});
  assign_strided_(t, {2}, {3}, 0, strided(t, {2}, {3}, 2));  // t[:, 0] = t[:, 2]
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{2, 1, 2, 5, 4, 5}));
  // Bool and integer tensors.
  Tensor m = zeros({2, 2}, {DType::b8});
  assign_strided_(m, {2}, {2}, 1, from_vector(std::vector<bool>{true, true}));
  EXPECT_EQ(m.to_vector<bool>(), (std::vector<bool>{false, true, false, true}));
  // Refused before anything is queued: a map that reaches an element twice,
  // one outside t, a value of another shape or dtype, autograd.
  const Tensor two = from_vector(std::vector<float>{1, 2}), four = from_vector(iota(4), {2, 2});
  Tensor leaf = zeros({4});
  leaf.set_requires_grad();
  eng().wait_all();
  EXPECT_REJECTED(ShapeError, assign_strided_(t, {2}, {0}, 0, two));
  EXPECT_REJECTED(ShapeError, assign_strided_(t, {2, 2}, {1, 1}, 0, four));
  EXPECT_REJECTED(ShapeError, assign_strided_(t, {2}, {5}, 2, two));
  EXPECT_REJECTED(ShapeError, assign_strided_(t, {3}, {2}, 0, two));
  EXPECT_REJECTED(DTypeError, assign_strided_(m, {2}, {2}, 0, two));
  EXPECT_REJECTED(UsageError, assign_strided_(leaf, {2}, {2}, 0, two));
}

TEST_P(PartViewsTest, AViewKeepsItsBlockAlive) {
  Tensor row;
  {
    Tensor m = from_vector(iota(6), {2, 3});
    row = select(m, 0, 1);
  }
  add_(row, 1.0);
  EXPECT_EQ(row.to_vector<float>(), (std::vector<float>{4, 5, 6}));
}

TEST_P(PartViewsTest, InPlaceOpsReadAPartlyOverlappingOperandAsItWas) {
  // numpy: x[1:] += x[:-1] adds the old values, not a running sum.
  Tensor x = from_vector(iota(6), {6});
  Tensor tail = slice(x, 0, 1, 6), head = slice(x, 0, 0, 5);
  add_(tail, head);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 3, 5, 7, 9}));
  // A broadcast row of the target itself.
  Tensor m = from_vector(iota(6, 1), {3, 2});
  Tensor first = select(m, 0, 0);
  mul_(m, first);
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{1, 4, 3, 8, 5, 12}));
  // copy_ moves the old values on every device.
  Tensor y = from_vector(iota(5), {5});
  Tensor dst = slice(y, 0, 1, 5);
  copy_(dst, slice(y, 0, 0, 4));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 1, 2, 3}));
  // The same view twice is no partial overlap (each element reads itself).
  Tensor z = from_vector(iota(4), {2, 2});
  Tensor zr = select(z, 0, 1);
  add_(zr, select(z, 0, 1));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{0, 1, 4, 6}));
  // A bad shape is still refused before anything is pushed.
  eng().wait_all();
  EXPECT_REJECTED(ShapeError, add_(head, slice(x, 0, 0, 2)));
}

TEST_P(PartViewsTest, OptimizerStateMustNotOverlapItsParameter) {
  Tensor flat = zeros({8});
  Tensor p = slice(flat, 0, 0, 4), g = slice(flat, 0, 2, 6), v = zeros({4}), own = ones({4});
  eng().wait_all();
  EXPECT_REJECTED(ValueError, sgd_step_(p, g, v, {.lr = 0.1, .momentum = 0.9}));
  Tensor vel = slice(flat, 0, 4, 8);  // another part of the parameter's block
  EXPECT_REJECTED(ValueError, sgd_step_(p, own, vel, {.lr = 0.1, .momentum = 0.9}));
}

TEST_P(PartViewsTest, AutogradThroughViewsAndTheirWriteCount) {
  Tensor x = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}).set_requires_grad();
  Tensor row = select(x, 0, 1);
  EXPECT_TRUE(row.is_same(x));
  Tensor loss = sum(row * row);
  backward(loss);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 0, 8, 10, 12}));
  EXPECT_FALSE(x.grad().is_same(x));
  // A tensor saved for the backward is a view; a write to its base
  // (anywhere in the block) makes that backward refuse to run.
  Tensor base = from_vector(std::vector<double>{1, 2, 3, 4}, {4});
  Tensor w = from_vector(std::vector<double>{1, 1}, {2}).set_requires_grad();
  Tensor saved = slice(base, 0, 0, 2);
  Tensor y = sum(w * saved);
  Tensor other = slice(base, 0, 2, 4);
  add_(other, 1.0);
  EXPECT_REJECTED(UsageError, backward(y));
  // In-place through a view of a leaf that needs a gradient is refused
  // while recording, as on the leaf itself.
  Tensor r0 = select(x, 0, 0);
  EXPECT_REJECTED(UsageError, add_(r0, 1.0));
}

TEST_P(PartViewsTest, AWriteToPartOfABlockDoesNotClearItsPoison) {
  // Row 0 gets a failed op's output; a good write to row 1 must not make
  // the block look clean again (poison is the block's, as ordering is).
  Tensor t = zeros({2, 2}, {DType::i32});
  Tensor bad = div(ones({2}, {DType::i32}), zeros({2}, {DType::i32}));  // fails on the backend
  Tensor row0 = select(t, 0, 0), row1 = select(t, 0, 1);
  copy_(row0, bad);
  copy_(row1, full({2}, 5, {DType::i32}));
  EXPECT_THROW(t.to_vector<std::int32_t>(), BackendError);
  EXPECT_THROW(row1.to_vector<std::int32_t>(), BackendError);
  // A write of the whole block clears it.
  copy_(t, full({2, 2}, 7, {DType::i32}));
  EXPECT_EQ(row0.to_vector<std::int32_t>(), (std::vector<std::int32_t>{7, 7}));
  eng().wait_all();  // the failure was reported at the barriers above
}

TEST_P(PartViewsTest, AViewOutsideItsBaseIsRefused) {
  Tensor a = zeros({4});
  EXPECT_THROW(Storage(a.storage(), 8, 12), ShapeError);
  EXPECT_THROW(Storage(a.storage(), 20, 0), ShapeError);
  Storage ok(a.storage(), 16, 0);
  EXPECT_EQ(ok.nbytes(), 0u);
  EXPECT_TRUE(ok.is_view());
}

}  // namespace
}  // namespace tide::testing
