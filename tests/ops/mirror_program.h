// A random program of in-place writes through a block and views of it
// (tide::as_strided: a column, a transpose, a row step, picks of those that
// compose onto the block, a row of a mirror, a mirror of a mirror),
// checked against a host model where every view is a list of the block's
// element indices.
// Run by mirror_test.cc on the CPU and by cuda_views_test.cc on a GPU.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <tide/ops/creation.h>
#include <tide/ops/elementwise.h>
#include <tide/core/mirror.h>
#include <tide/ops/views.h>

namespace tide::testing {

struct MirrorHandle {
  std::string name;
  Tensor t;
  std::vector<std::int64_t> at;  // the block's element behind each of t's, row-major
};

/// The block elements a strided pick of `of` reaches, in order.
inline std::vector<std::int64_t> picked(const std::vector<std::int64_t>& of, const Shape& shape,
                                        const std::vector<std::int64_t>& strides, std::int64_t offset) {
  std::vector<std::int64_t> out, index(static_cast<std::size_t>(shape.ndim()), 0);
  for (std::int64_t n = 0; n < shape.numel(); ++n) {
    std::int64_t flat = offset;
    for (int d = 0; d < shape.ndim(); ++d) flat += index[static_cast<std::size_t>(d)] * strides[static_cast<std::size_t>(d)];
    out.push_back(of[static_cast<std::size_t>(flat)]);
    for (int d = shape.ndim() - 1; d >= 0; --d) {
      if (++index[static_cast<std::size_t>(d)] < shape[d]) break;
      index[static_cast<std::size_t>(d)] = 0;
    }
  }
  return out;
}

inline void run_mirror_program(Device dev, std::uint32_t seed, int steps) {
  constexpr std::int64_t R = 5, C = 6;
  std::vector<float> model(R * C);
  for (std::size_t i = 0; i < model.size(); ++i) model[i] = static_cast<float>(i);
  std::vector<std::int64_t> all(R * C);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);

  std::vector<MirrorHandle> h;
  h.push_back({"base", from_vector(model, {R, C}, dev), all});
  auto pick = [&](const std::string& name, std::size_t of, const Shape& shape, std::vector<std::int64_t> strides,
                  std::int64_t offset) {
    Tensor t = as_strided(h[of].t, shape, strides, offset);
    h.push_back({name, t, picked(h[of].at, shape, strides, offset)});
  };
  pick("column 2", 0, {R}, {C}, 2);
  pick("transpose", 0, {C, R}, {1, C}, 0);
  pick("even rows", 0, {3, C}, {2 * C, 1}, 0);
  pick("column 1 of the transpose", 2, {C}, {R}, 1);
  pick("column 2 reversed", 1, {R}, {-1}, R - 1);
  {  // a row of a mirror: a view of the mirror's storage, not a mirror of its own
    Tensor row = select(h[2].t, 0, 3);
    h.push_back({"row 3 of the transpose", row, picked(h[2].at, {R}, {1}, 3 * R)});
  }
  h.push_back({"row 4 of the base", select(h[0].t, 0, 4), picked(all, {C}, {1}, 4 * C)});
  // A pick of a reshaped mirror does not compose onto the base: a mirror of
  // the mirror, which the engine keeps equal through both levels.
  h.push_back({"every other element of the flattened transpose", as_strided(reshape(h[2].t, {R * C}), {R * C / 2}, {2}, 0),
               picked(h[2].at, {R * C / 2}, {2}, 0)});
  for (std::size_t i : {1, 2, 3, 5, 6, 8}) EXPECT_TRUE(is_mirror(h[i].t)) << h[i].name;
  EXPECT_FALSE(is_mirror(h[4].t));  // a column of the transpose is a row of the base: a view of it
  EXPECT_TRUE(h[4].t.is_same(h[0].t));
  EXPECT_FALSE(is_mirror(h[7].t));
  EXPECT_EQ(mirror_of(*h[8].t.storage())->source(), h[2].t.storage());
  const Tensor copy = strided(h[0].t, {R}, {C}, 2);  // a copy follows nothing
  const std::vector<float> copy_at_start{2, 8, 14, 20, 26};

  auto expect_all = [&](const std::string& when) {
    for (const MirrorHandle& x : h) {
      std::vector<float> want;
      for (std::int64_t i : x.at) want.push_back(model[static_cast<std::size_t>(i)]);
      ASSERT_EQ(x.t.to_vector<float>(), want) << x.name << " " << when;
    }
  };

  std::mt19937 gen(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  for (int step = 0; step < steps; ++step) {
    const std::size_t which = static_cast<std::size_t>(uniform(0, static_cast<int>(h.size()) - 1));
    MirrorHandle& x = h[which];
    std::vector<float> now;
    for (std::int64_t i : x.at) now.push_back(model[static_cast<std::size_t>(i)]);
    std::string what = x.name;
    switch (uniform(0, 4)) {
      case 0: {
        const int c = uniform(-3, 3);
        add_(x.t, static_cast<double>(c));
        for (float& v : now) v += static_cast<float>(c);
        what += " += " + std::to_string(c);
        break;
      }
      case 1:
        mul_(x.t, -1.0);
        for (float& v : now) v = -v;
        what += " *= -1";
        break;
      case 2: {
        std::vector<float> vals;
        for (std::size_t i = 0; i < now.size(); ++i) vals.push_back(static_cast<float>(uniform(-50, 50)));
        copy_(x.t, from_vector(vals, x.t.shape(), dev));
        now = vals;
        what += " = values";
        break;
      }
      case 3: {  // plus another handle of the same shape, read before the write
        for (const MirrorHandle& y : h) {
          if (y.t.shape() != x.t.shape() || &y == &x) continue;
          add_(x.t, y.t);
          for (std::size_t i = 0; i < now.size(); ++i) now[i] += model[static_cast<std::size_t>(y.at[i])];
          what += " += " + y.name;
          break;
        }
        break;
      }
      default: {  // the one handle remade: the old mirror is dropped
        const bool column = which == 1;
        if (column) {
          h[1].t = Tensor();
          h[1].t = as_strided(h[0].t, {R}, {C}, 2);
          what += " remade";
        }
        break;
      }
    }
    // Writes through a handle land at its elements of the block (each once).
    for (std::size_t i = 0; i < now.size(); ++i) model[static_cast<std::size_t>(x.at[i])] = now[i];
    if (step % 7 == 6 || step + 1 == steps) expect_all("after step " + std::to_string(step) + " (" + what + ")");
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_EQ(copy.to_vector<float>(), copy_at_start);
}

}  // namespace tide::testing
