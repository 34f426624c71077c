// Views (a handle with another shape) and the strided copy that reorders.
#include <tide/ops/views.h>
#include <tide/ops/elementwise.h>
#include <tide/core/mirror.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/record.h"
#include "kernels.h"
#include "op_util.h"
#include "views_internal.h"

namespace tide {

namespace {

using namespace detail;

/// A handle on a's storage with another shape; recorded as a view of a.
Tensor view_as(const char* name, const Tensor& a, const Shape& shape) {
  Tensor out(a.storage(), shape, a.dtype());
  if (autograd::wants(a)) autograd::record_view(name, out, a);
  return out;
}

std::string dims_str(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

/// a's row-major strides, in elements.
std::vector<std::int64_t> contiguous_strides(const Shape& s) {
  std::vector<std::int64_t> st(static_cast<std::size_t>(s.ndim()));
  std::int64_t step = 1;
  for (int d = s.ndim() - 1; d >= 0; --d) {
    st[static_cast<std::size_t>(d)] = step;
    step *= s[d];
  }
  return st;
}

/// `axis` in [-n, n), returned in [0, n).
int axis_in(const char* op, const Tensor& a, int axis) { return normalize_axis(op, a, axis); }

}  // namespace

Tensor reshape(const Tensor& a, const std::vector<std::int64_t>& dims) {
  const char* name = "reshape";
  engine_of(name, a, "a");
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1 && infer < 0) {
      infer = static_cast<int>(i);
    } else if (dims[i] < 0) {
      throw ShapeError(op_prefix(name) + "extents " + dims_str(dims) +
                       (dims[i] == -1 ? ": only one may be -1" : ": an extent is negative"));
    } else if (__builtin_mul_overflow(known, dims[i], &known)) {
      throw ShapeError(op_prefix(name) + "extents " + dims_str(dims) + " multiply past 2^63 - 1");
    }
  }
  std::vector<std::int64_t> out = dims;
  if (infer >= 0) {
    if (known == 0 || a.numel() % known != 0)
      throw ShapeError(op_prefix(name) + "cannot infer the -1 of " + dims_str(dims) + " for shape " +
                       a.shape().str() + " (" + std::to_string(a.numel()) + " elements)");
    out[static_cast<std::size_t>(infer)] = a.numel() / known;
  }
  const Shape shape(out.begin(), out.end());  // ShapeError past kMaxDims
  if (shape.numel() != a.numel())
    throw ShapeError(op_prefix(name) + "shape " + a.shape().str() + " (" + std::to_string(a.numel()) +
                     " elements) cannot be viewed as " + shape.str() + " (" + std::to_string(shape.numel()) + ")");
  return view_as(name, a, shape);
}

Tensor flatten(const Tensor& a) {
  engine_of("flatten", a, "a");
  return view_as("flatten", a, Shape{a.numel()});
}

Tensor squeeze(const Tensor& a, int axis) {
  const char* name = "squeeze";
  engine_of(name, a, "a");
  const int ax = axis_in(name, a, axis);
  if (a.shape()[ax] != 1)
    throw ShapeError(op_prefix(name) + "axis " + std::to_string(axis) + " of shape " + a.shape().str() +
                     " has extent " + std::to_string(a.shape()[ax]) + ", not 1");
  return view_as(name, a, a.shape().without(ax));
}

Tensor squeeze(const Tensor& a) {
  engine_of("squeeze", a, "a");
  Shape s;
  for (std::int64_t e : a.shape())
    if (e != 1) s.push_back(e);
  return view_as("squeeze", a, s);
}

Tensor unsqueeze(const Tensor& a, int axis) {
  const char* name = "unsqueeze";
  engine_of(name, a, "a");
  const int nd = a.ndim();
  if (axis < -nd - 1 || axis > nd)
    throw ShapeError(op_prefix(name) + "axis " + std::to_string(axis) + " is out of range for shape " +
                     a.shape().str() + " (valid: " + std::to_string(-nd - 1) + " to " + std::to_string(nd) + ")");
  const int at = axis < 0 ? axis + nd + 1 : axis;
  Shape s;
  for (int d = 0; d <= nd; ++d) {
    if (d == at) s.push_back(1);  // ShapeError past kMaxDims
    if (d < nd) s.push_back(a.shape()[d]);
  }
  return view_as(name, a, s);
}

/// The map of strided(a, shape, strides, offset) over an `a` of `n`
/// elements, after checking that every element it reaches lies in a.
std::shared_ptr<const kernels::StridedMap> detail::strided_map(const char* name, std::int64_t n, const Shape& shape,
                                                       const std::vector<std::int64_t>& strides,
                                                       std::int64_t offset) {
  if (static_cast<int>(strides.size()) != shape.ndim())
    throw ShapeError(op_prefix(name) + std::to_string(strides.size()) + " strides for shape " + shape.str());
  auto map = std::make_shared<kernels::StridedMap>();
  map->offset = offset;
  if (shape.numel() > 0) {
    // The lowest and highest elements reached must lie in a. Overflow cannot
    // hide a bad stride: each term is bounded by a's size before it is formed.
    std::int64_t lo = offset, hi = offset;
    bool inside = offset >= 0 && offset < n;
    for (int d = 0; d < shape.ndim() && inside; ++d) {
      const std::int64_t s = strides[static_cast<std::size_t>(d)], last = shape[d] - 1;
      // |s| > n / last reaches outside; INT64_MIN has no magnitude.
      if (last > 0 && (s == INT64_MIN || (s < 0 ? -s : s) > n / last)) inside = false;
      else (s > 0 ? hi : lo) += last * s;
      inside = inside && lo >= 0 && hi < n;
    }
    if (!inside)
      throw ShapeError(op_prefix(name) + "shape " + shape.str() + " with strides " + dims_str(strides) +
                       " from offset " + std::to_string(offset) + " reaches outside the " + std::to_string(n) +
                       " elements of a");
    for (int d = 0; d < shape.ndim(); ++d) {  // drop extents of 1; merge axes that run on
      const std::int64_t ext = shape[d], s = strides[static_cast<std::size_t>(d)];
      if (ext == 1) continue;
      if (map->ndim > 0 && map->stride[map->ndim - 1] == s * ext) {
        map->extent[map->ndim - 1] *= ext;
        map->stride[map->ndim - 1] = s;
        continue;
      }
      map->extent[map->ndim] = ext;
      map->stride[map->ndim] = s;
      ++map->ndim;
    }
  }
  if (map->ndim == 0) {  // one element, or none
    map->ndim = 1;
    map->extent[0] = shape.numel();
  }
  return map;
}

namespace {

/// Whether a strided map picks one run of consecutive elements in order:
/// then its result is a view of them (at least one element; an empty
/// result is a tensor of its own).
bool picks_one_run(const kernels::StridedMap& map, const Shape& shape) {
  return shape.numel() > 0 && map.ndim == 1 && (map.extent[0] == 1 || map.stride[0] == 1);
}

}  // namespace

Tensor strided(const Tensor& a, const Shape& shape, const std::vector<std::int64_t>& strides, std::int64_t offset,
               Loc loc) {
  const char* name = "strided";
  Engine& e = engine_of(name, a, "a");
  const Device dev = a.device();
  const auto fn = kernels::kernel_for(name, dev, kernels::elementwise(dev).strided_copy);
  auto map = strided_map(name, a.numel(), shape, strides, offset);
  const DType dt = a.dtype();
  if (picks_one_run(*map, shape)) {  // a view: no op, no copy
    Tensor out = offset == 0 && shape.numel() == a.numel()
                     ? Tensor(a.storage(), shape, dt)
                     : Tensor(std::make_shared<Storage>(a.storage(), static_cast<std::size_t>(offset) * dtype_size(dt),
                                                        tensor_bytes(shape, dt)),
                              shape, dt);
    if (autograd::wants(a)) autograd::record_strided(out, a, strides, offset, loc);
    return out;
  }
  Tensor out = push_new(
      e, name, shape, dt, dev, {a.storage()},
      [fn, dt, map = std::move(map)](const OpContext& ctx) {
        fn(dt, ctx.in<void>(0), ctx.out<void>(0), *map, ctx.native_stream);
      },
      loc, -1, true);
  if (autograd::wants(a)) autograd::record_strided(out, a, strides, offset, loc);
  return out;
}

namespace {

/// Pushes one gather or scatter (`kernel`) along `map` from `from` to `to`;
/// a scatter writes only the picked elements (OpDesc::partial_write).
template <typename Kernel>
void push_moves(Engine& e, const char* name, Device dev, const std::shared_ptr<Storage>& from,
                const std::shared_ptr<Storage>& to, Kernel kernel, DType dt,
                std::shared_ptr<const kernels::StridedMap> map, Loc loc, bool scatter) {
  OpDesc op;
  op.name = name;
  op.memory_bound = true;
  op.launch_only = true;
  op.partial_write = scatter;
  op.device = dev;
  op.fn = [kernel, dt, map = std::move(map)](const OpContext& ctx) {
    kernel(dt, ctx.in<void>(0), ctx.out<void>(0), *map, ctx.native_stream);
  };
  op.reads = {from};
  op.writes = {to};
  op.loc = loc;
  e.push(std::move(op));
}

/// How a tensor from as_strided follows its source: a gather of the picked
/// elements into it after the source is written, a scatter back after it
/// is written (<tide/core/mirror.h>).
class StridedMirror final : public Mirror {
 public:
  StridedMirror(const Tensor& source, std::shared_ptr<const kernels::StridedMap> map, const Shape& shape,
                const std::vector<std::int64_t>& strides, std::int64_t offset, Loc loc)
      : source_(source.storage()), dtype_(source.dtype()), device_(source.device()), map_(std::move(map)),
        shape_(shape), strides_(strides), offset_(offset), loc_(loc) {}

  /// The source's elements as one axis: what compose()'s picks index.
  Tensor flat_source() const {
    return Tensor(source_, Shape{static_cast<std::int64_t>(source_->nbytes() / dtype_size(dtype_))}, dtype_);
  }

  /// A pick (shape, strides, offset) of this mirror (of its own shape) as
  /// a pick of the source's elements, when it is one: when every axis of
  /// it steps along one axis of the mirror without carrying into the next.
  std::optional<std::pair<std::vector<std::int64_t>, std::int64_t>> compose(
      const Shape& shape, const std::vector<std::int64_t>& strides, std::int64_t offset) const {
    const int nd = shape_.ndim();
    std::vector<std::int64_t> cs(static_cast<std::size_t>(nd)), digit(static_cast<std::size_t>(nd));
    std::int64_t step = 1;
    for (int k = nd - 1; k >= 0; --k) {
      cs[static_cast<std::size_t>(k)] = step;
      step *= shape_[k];
    }
    for (int k = 0; k < nd; ++k) {  // offset's index in the mirror
      digit[static_cast<std::size_t>(k)] = offset / cs[static_cast<std::size_t>(k)];
      offset %= cs[static_cast<std::size_t>(k)];
    }
    std::vector<std::int64_t> lo = digit, hi = digit, out(strides.size(), 0);
    for (int d = 0; d < shape.ndim(); ++d) {
      const std::int64_t s = strides[static_cast<std::size_t>(d)], last = shape[d] - 1;
      if (last == 0 || s == 0) continue;
      const std::int64_t mag = s < 0 ? -s : s;
      int k = nd - 1;
      while (k > 0 && mag >= cs[static_cast<std::size_t>(k - 1)]) --k;  // the axis whose digit s moves
      if (mag % cs[static_cast<std::size_t>(k)] != 0) return std::nullopt;
      const std::int64_t by = s / cs[static_cast<std::size_t>(k)];
      (by < 0 ? lo : hi)[static_cast<std::size_t>(k)] += last * by;
      out[static_cast<std::size_t>(d)] = by * strides_[static_cast<std::size_t>(k)];
    }
    std::int64_t at = offset_;
    for (int k = 0; k < nd; ++k) {
      if (lo[static_cast<std::size_t>(k)] < 0 || hi[static_cast<std::size_t>(k)] >= shape_[k]) return std::nullopt;
      at += digit[static_cast<std::size_t>(k)] * strides_[static_cast<std::size_t>(k)];
    }
    return std::make_pair(std::move(out), at);
  }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  /// The element of the source (counted in its own elements) that this
  /// mirror's element `i` (row-major in the mirror's shape) follows.
  std::int64_t source_element(std::int64_t i) const {
    std::int64_t at = offset_;
    for (int k = shape_.ndim() - 1; k >= 0; --k) {
      at += (i % shape_[k]) * strides_[static_cast<std::size_t>(k)];
      i /= shape_[k];
    }
    return at;
  }
  /// Whether this mirror picks (shape, strides, offset) of `source`'s elements.
  bool picks(const Storage& source, const Shape& shape, const std::vector<std::int64_t>& strides,
             std::int64_t offset) const {
    return source_.get() == &source && shape_ == shape && strides_ == strides && offset_ == offset;
  }

  const std::shared_ptr<Storage>& source() const override { return source_; }

  void pull(Engine& e, const std::shared_ptr<Storage>& self) override {
    move(e, "as_strided (mirror pull)", kernels::elementwise(device_).strided_copy, source_, self, false);
  }
  void push_back(Engine& e, const std::shared_ptr<Storage>& self) override {
    move(e, "as_strided (mirror write-back)", kernels::elementwise(device_).strided_scatter, self, source_, true);
  }

 private:
  template <typename Fn>
  void move(Engine& e, const char* name, Fn fn, const std::shared_ptr<Storage>& from,
            const std::shared_ptr<Storage>& to, bool scatter) {
    const auto kernel = kernels::kernel_for(name, device_, fn);
    push_moves(e, name, device_, from, to, kernel, dtype_, map_, loc_, scatter);
  }

  std::shared_ptr<Storage> source_;
  DType dtype_;
  Device device_;
  std::shared_ptr<const kernels::StridedMap> map_;
  Shape shape_;  // the pick as given: the mirror's shape, strides and offset in the source's elements
  std::vector<std::int64_t> strides_;
  std::int64_t offset_;
  Loc loc_;
};

bool reaches_twice(const Shape& shape, const std::vector<std::int64_t>& strides);

}  // namespace

Tensor as_strided(const Tensor& a, const Shape& shape, const std::vector<std::int64_t>& strides, std::int64_t offset,
                  Loc loc) {
  const char* name = "as_strided";
  engine_of(name, a, "a");
  const auto map = strided_map(name, a.numel(), shape, strides, offset);
  if (shape.numel() == 0 || picks_one_run(*map, shape)) return strided(a, shape, strides, offset, loc);
  if (reaches_twice(shape, strides))
    throw ShapeError(op_prefix(name) + "shape " + shape.str() + " with strides " + dims_str(strides) +
                     " reaches some element of a twice; a view that writes back needs each element once (strided() "
                     "makes a copy)");
  // A pick of a whole mirror that is also a pick of its source follows the
  // source (a.T.T is a view of a; a column of a.T mirrors a): chains of
  // mirrors, each with its own copy and copy op per write, only where the
  // picks do not compose (a pick of a reshaped mirror, say).
  if (const auto* m = dynamic_cast<const StridedMirror*>(mirror_of(*a.storage()));
      m && !a.storage()->is_view() && a.shape() == m->shape()) {
    if (auto c = m->compose(shape, strides, offset)) {
      Tensor out = as_strided(m->flat_source(), shape, c->first, c->second, loc);  // recorded below, as of a
      if (autograd::wants(a)) autograd::record_strided(out, a, strides, offset, loc);
      return out;
    }
  }
  Tensor out = strided(a, shape, strides, offset, loc);  // the gather that fills the mirror, recorded as strided's
  attach_mirror(out.storage(), std::make_shared<StridedMirror>(a, map, shape, strides, offset, loc));
  return out;
}

bool is_mirror_of(const Tensor& m, const Tensor& a, const Shape& shape, const std::vector<std::int64_t>& strides,
                  std::int64_t offset) {
  if (!m.defined() || !a.defined() || m.storage()->is_view() || m.shape() != shape || m.dtype() != a.dtype())
    return false;
  const auto* sm = dynamic_cast<const StridedMirror*>(mirror_of(*m.storage()));
  return sm && sm->picks(*a.storage(), shape, strides, offset);
}

detail::AliasSpan detail::alias_span(const Tensor& t) {
  const Storage* st = t.storage().get();
  AliasSpan span{st->owner(), st->offset(), st->offset() + t.nbytes(), false};
  while (const Mirror* m = mirror_of(*span.block)) {
    const Storage& src = *m->source();
    span = {src.owner(), src.offset(), src.offset() + src.nbytes(), true};
  }
  return span;
}

bool detail::writes_part_of_a_mirror(const Tensor& t) {
  const Storage& st = *t.storage();
  return mirror_of(*st.owner()) != nullptr && !st.covers_owner();
}

namespace {

/// The blocks a tensor's elements lie in and follow: its own, then each
/// mirror's source's, up to a block that is no mirror.
std::vector<const Storage*> path_of(const Tensor& t) {
  std::vector<const Storage*> path{t.storage()->owner()};
  while (const Mirror* m = mirror_of(*path.back())) path.push_back(m->source()->owner());
  return path;
}

/// Calls f(at) with the byte of path[to] at which the element follows that
/// each element of bytes [begin, end) of path[from] (elements of `es`
/// bytes) ends up, mirror after mirror. False, calling nothing, where a
/// mirror on the way is of a kind whose picks are not known here.
template <typename F>
bool each_element(const std::vector<const Storage*>& path, std::size_t from, std::size_t to, std::size_t begin,
                  std::size_t end, std::size_t es, F&& f) {
  std::vector<const StridedMirror*> mirrors;
  std::vector<std::size_t> offsets;  // of each mirror's source in its block
  for (std::size_t k = from; k < to; ++k) {
    const Mirror* m = mirror_of(*path[k]);
    mirrors.push_back(dynamic_cast<const StridedMirror*>(m));
    if (!mirrors.back()) return false;
    offsets.push_back(m->source()->offset());
  }
  for (std::size_t b = begin; b < end; b += es) {
    std::size_t at = b;
    for (std::size_t k = 0; k < mirrors.size(); ++k)  // a mirror's own block: its element at / es
      at = offsets[k] + static_cast<std::size_t>(mirrors[k]->source_element(static_cast<std::int64_t>(at / es))) * es;
    f(at);
  }
  return true;
}

/// What a step does to block path[level], where it meets another tensor's
/// path: the elements of t it changes there (t's own, followed up), and
/// those its write-backs write there (all of the block below `level` on
/// t's path, written back whole; t's own where `level` is t's block).
struct AtBlock {
  const std::vector<const Storage*>* path;
  std::size_t level, begin, end, es;  // t's bytes in its block, its element size
  template <typename F>
  bool changed(F&& f) const {
    return each_element(*path, 0, level, begin, end, es, f);
  }
  template <typename F>
  bool written_back(F&& f) const {
    if (level == 0) return changed(f);
    return each_element(*path, level - 1, level, 0, (*path)[level - 1]->nbytes(), es, f);
  }
};

/// Whether the elements `a` calls meet those `b` calls, within bytes
/// [lo, hi) of one block (a bit per element). True where either cannot
/// tell (a mirror of a kind unknown here).
template <typename A, typename B>
bool meet(A&& a, B&& b, std::size_t lo, std::size_t hi, std::size_t es) {
  std::vector<bool> marked((hi - lo + es - 1) / es, false);
  if (!a([&](std::size_t at) {
        if (at >= lo && at < hi) marked[(at - lo) / es] = true;
      }))
    return true;
  bool shared = false;
  if (!b([&](std::size_t at) { shared = shared || (at >= lo && at < hi && marked[(at - lo) / es]); })) return true;
  return shared;
}

}  // namespace

bool detail::shares_memory(const Tensor& a, bool a_written, const Tensor& b, bool b_written) {
  if (a.nbytes() == 0 || b.nbytes() == 0 || (!a_written && !b_written)) return false;
  // Without a mirror on either side (every optimizer step's usual case):
  // one block, and its bytes.
  const Storage &sa = *a.storage(), &sb = *b.storage();
  if (!mirror_of(*sa.owner()) && !mirror_of(*sb.owner()))
    return sa.owner() == sb.owner() && sa.offset() < sb.offset() + b.nbytes() &&
           sb.offset() < sa.offset() + a.nbytes();
  const std::vector<const Storage*> pa = path_of(a), pb = path_of(b);
  if (pa.back() != pb.back()) return false;
  // The first block both paths reach: from there up they are one path,
  // and what each step leaves in that block is all that can collide.
  std::size_t ia = 0, ib = 0;
  for (; ia < pa.size(); ++ia) {
    ib = static_cast<std::size_t>(std::find(pb.begin(), pb.end(), pa[ia]) - pb.begin());
    if (ib < pb.size()) break;
  }
  const AtBlock at_a{&pa, ia, sa.offset(), sa.offset() + a.nbytes(), dtype_size(a.dtype())};
  const AtBlock at_b{&pb, ib, sb.offset(), sb.offset() + b.nbytes(), dtype_size(b.dtype())};
  if (ia == 0 && ib == 0) return at_a.begin < at_b.end && at_b.begin < at_a.end;  // one block: its bytes
  if (at_a.es != at_b.es) return true;  // no op of tide reads one block as two dtypes
  // Bytes of the meeting block that either may reach: t's own there, else
  // the source of the mirror below it on t's path.
  auto bound = [](const AtBlock& t) {
    if (t.level == 0) return std::make_pair(t.begin, t.end);
    const Storage& src = *mirror_of(*(*t.path)[t.level - 1])->source();
    return std::make_pair(src.offset(), src.offset() + src.nbytes());
  };
  const auto [a_lo, a_hi] = bound(at_a);
  const auto [b_lo, b_hi] = bound(at_b);
  const std::size_t lo = std::max(a_lo, b_lo), hi = std::min(a_hi, b_hi), es = at_a.es;
  if (lo >= hi) return false;
  auto changed = [](const AtBlock& t) { return [&t](auto&& f) { return t.changed(f); }; };
  auto written_back = [](const AtBlock& t) { return [&t](auto&& f) { return t.written_back(f); }; };
  // A read meets what the other step changes (write-backs rewrite values
  // that did not change, after the op); two writes collide where either's
  // write-backs land on what the other changed.
  if (!b_written) return meet(changed(at_a), changed(at_b), lo, hi, es);
  if (!a_written) return meet(changed(at_b), changed(at_a), lo, hi, es);
  return meet(written_back(at_a), changed(at_b), lo, hi, es) || meet(written_back(at_b), changed(at_a), lo, hi, es);
}

bool is_mirror(const Tensor& t) {
  t.check_defined("is_mirror");
  return mirror_of(*t.storage()) != nullptr;
}

namespace {

/// Whether the map reaches some element twice: sorted by |stride|, each
/// axis must step past everything the smaller ones span.
bool reaches_twice(const Shape& shape, const std::vector<std::int64_t>& strides) {
  std::vector<std::pair<std::int64_t, std::int64_t>> axes;  // (|stride|, extent) of axes with extent > 1
  for (int d = 0; d < shape.ndim(); ++d)
    if (shape[d] > 1) axes.emplace_back(strides[static_cast<std::size_t>(d)] < 0 ? -strides[static_cast<std::size_t>(d)]
                                                                               : strides[static_cast<std::size_t>(d)],
                                        shape[d]);
  std::sort(axes.begin(), axes.end());
  std::int64_t span = 0;  // the largest offset the smaller axes reach
  for (const auto& [stride, extent] : axes) {
    if (stride <= span) return true;
    span += stride * (extent - 1);
  }
  return false;
}

}  // namespace

void assign_strided_(Tensor& a, const Shape& shape, const std::vector<std::int64_t>& strides, std::int64_t offset,
                     const Tensor& value, Loc loc) {
  const char* name = "assign_strided_";
  Engine& e = engine_of(name, a, "a");
  engine_of(name, value, "value");
  check_same_device(name, a, value);
  check_same_dtype(name, a, value);
  if (value.shape() != shape)
    throw ShapeError(op_prefix(name) + "value has shape " + value.shape().str() + ", the elements picked " +
                     shape.str());
  auto map = strided_map(name, a.numel(), shape, strides, offset);
  if (reaches_twice(shape, strides))
    throw ShapeError(op_prefix(name) + "the strides reach some element of a twice (an assignment picks each "
                     "element at most once)");
  if (GradMode::enabled() && (a.requires_grad() || value.requires_grad()))
    autograd::refuse_in_place(name, a, &value);
  if (shape.numel() == 0) return;
  // A value that shares a's bytes is read from a copy: the op writes a.
  if (value.storage()->owner() == a.storage()->owner()) {
    assign_strided_(a, shape, strides, offset, copy_to(value, value.device(), loc), loc);
    return;
  }
  const Device dev = a.device();
  const auto fn = kernels::kernel_for(name, dev, kernels::elementwise(dev).strided_scatter);
  push_moves(e, name, dev, value.storage(), a.storage(), fn, a.dtype(), std::move(map), loc, true);
}

Tensor detail::strided_scatter_add(const Tensor& src, const Shape& shape, const std::vector<std::int64_t>& strides,
                                   std::int64_t offset, Loc loc) {
  const char* name = "strided_scatter_add";
  Engine& e = engine_of(name, src, "src");
  const Device dev = src.device();
  const auto fn = kernels::kernel_for(name, dev, kernels::elementwise(dev).strided_scatter_add);
  auto map = strided_map(name, shape.numel(), src.shape(), strides, offset);
  const DType dt = src.dtype();
  Tensor out = zeros(shape, {dt, dev}, loc);
  push_into(
      e, name, dev, {src.storage()}, {out.storage()},
      [fn, dt, map = std::move(map)](const OpContext& ctx) {
        fn(dt, ctx.in<void>(0), ctx.out<void>(0), *map, ctx.native_stream);
      },
      loc, true);
  if (autograd::wants(src)) autograd::record_not_differentiable(name, out, {&src}, loc);
  return out;
}

Tensor permute(const Tensor& a, const std::vector<int>& order, Loc loc) {
  const char* name = "permute";
  engine_of(name, a, "a");
  const int nd = a.ndim();
  bool ok = static_cast<int>(order.size()) == nd;
  std::vector<bool> seen(static_cast<std::size_t>(nd), false);
  for (std::size_t i = 0; ok && i < order.size(); ++i) {
    const int ax = order[i] < 0 ? order[i] + nd : order[i];
    ok = ax >= 0 && ax < nd && !seen[static_cast<std::size_t>(ax)];
    if (ok) seen[static_cast<std::size_t>(ax)] = true;
  }
  if (!ok) {
    std::string o = "[";
    for (std::size_t i = 0; i < order.size(); ++i) o += (i ? ", " : "") + std::to_string(order[i]);
    throw ShapeError(op_prefix(name) + "order " + o + "] is not a permutation of the " + std::to_string(nd) +
                     " axes of shape " + a.shape().str());
  }
  const std::vector<std::int64_t> from = contiguous_strides(a.shape());
  Shape shape;
  std::vector<std::int64_t> strides;
  for (int i : order) {
    const int ax = i < 0 ? i + nd : i;
    shape.push_back(a.shape()[ax]);
    strides.push_back(from[static_cast<std::size_t>(ax)]);
  }
  return strided(a, shape, strides, 0, loc);
}

Tensor transpose(const Tensor& a, int axis0, int axis1, Loc loc) {
  const char* name = "transpose";
  engine_of(name, a, "a");
  if (a.ndim() < 2 && axis0 == -2 && axis1 == -1)
    throw ShapeError(op_prefix(name) + "needs two axes, shape " + a.shape().str() + " has " +
                     std::to_string(a.ndim()));
  const int x = axis_in(name, a, axis0), y = axis_in(name, a, axis1);
  std::vector<int> order(static_cast<std::size_t>(a.ndim()));
  for (int d = 0; d < a.ndim(); ++d) order[static_cast<std::size_t>(d)] = d;
  std::swap(order[static_cast<std::size_t>(x)], order[static_cast<std::size_t>(y)]);
  return permute(a, order, loc);
}

Tensor slice(const Tensor& a, int axis, std::int64_t start, std::int64_t stop, std::int64_t step, Loc loc) {
  const char* name = "slice";
  engine_of(name, a, "a");
  const int ax = axis_in(name, a, axis);
  if (step == 0) throw ValueError(op_prefix(name) + "step must not be 0");
  const std::int64_t n = a.shape()[ax];
  // Python's slice.indices(): negative bounds count from the end, then clamp
  // to [0, n] going forward or [-1, n - 1] going back.
  auto bound = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < 0) v += n;
    return v < lo ? lo : (v > hi ? hi : v);
  };
  const std::int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? n : n - 1;
  start = bound(start, lo, hi);
  stop = bound(stop, lo, hi);
  // Written so that no step, INT64_MIN and INT64_MAX included, overflows.
  std::int64_t count = 0;
  if (step > 0 && stop > start) count = (stop - start - 1) / step + 1;
  if (step < 0 && start > stop) count = step == INT64_MIN ? 1 : (start - stop - 1) / -step + 1;
  const std::vector<std::int64_t> from = contiguous_strides(a.shape());
  Shape shape;
  std::vector<std::int64_t> strides;
  for (int d = 0; d < a.ndim(); ++d) {
    shape.push_back(d == ax ? count : a.shape()[d]);
    // One element or none walks nowhere along the axis: stride 0 (a huge
    // step times the axis's stride would overflow, to no purpose).
    const std::int64_t along = count > 1 ? from[static_cast<std::size_t>(d)] * step : 0;
    strides.push_back(d == ax ? along : from[static_cast<std::size_t>(d)]);
  }
  const std::int64_t offset = count > 0 ? start * from[static_cast<std::size_t>(ax)] : 0;
  return strided(a, shape, strides, offset, loc);
}

Tensor select(const Tensor& a, int axis, std::int64_t index, Loc loc) {
  const char* name = "select";
  engine_of(name, a, "a");
  const int ax = axis_in(name, a, axis);
  const std::int64_t n = a.shape()[ax];
  if (index < -n || index >= n)
    throw ShapeError(op_prefix(name) + "index " + std::to_string(index) + " is out of range for axis " +
                     std::to_string(axis) + " of shape " + a.shape().str());
  const std::int64_t i = index < 0 ? index + n : index;
  const std::vector<std::int64_t> from = contiguous_strides(a.shape());
  std::vector<std::int64_t> strides;
  for (int d = 0; d < a.ndim(); ++d)
    if (d != ax) strides.push_back(from[static_cast<std::size_t>(d)]);
  return strided(a, a.shape().without(ax), strides, i * from[static_cast<std::size_t>(ax)], loc);
}

}  // namespace tide
