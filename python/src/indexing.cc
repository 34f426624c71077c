#include "indexing.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "bindings.h"
#include "call_site.h"

namespace py = pybind11;

namespace tide::python {

namespace {

/// Where basic indexing (ints, slices, None and one Ellipsis, alone or in a
/// tuple, as numpy reads them) takes its elements: the arguments of
/// tide::strided. Checks the key and pushes nothing. An int out of range
/// raises IndexError, so that iterating over a tensor stops at its end.
struct IndexMap {
  Shape shape;
  std::vector<std::int64_t> strides;
  std::int64_t offset = 0;
};

IndexMap index_map(const Tensor& t, const py::object& key) {
  t.check_defined("indexing");
  py::tuple items = py::isinstance<py::tuple>(key) ? py::reinterpret_borrow<py::tuple>(key) : py::make_tuple(key);
  int consumed = 0, ellipses = 0;
  for (const py::handle item : items) {
    if (item.is_none()) continue;
    if (PyBool_Check(item.ptr()))  // numpy reads a bool as a mask, not as 0 or 1
      throw py::type_error("tide tensors take no boolean indices (masks)");
    if (py::isinstance<Tensor>(item) || py::isinstance<py::array>(item) || py::isinstance<py::list>(item))
      throw py::type_error(
          "tide tensors take ints, slices, None and ... in a tuple key; a mask (a tensor or boolean array) or a "
          "list or array of indices works as the whole key only (t[mask], t[[0, 2]])");
    if (item.ptr() == Py_Ellipsis) ++ellipses;
    else if (PyIndex_Check(item.ptr()) || py::isinstance<py::slice>(item)) ++consumed;  // ints, numpy's ints
    else
      throw py::type_error("tide tensors take ints, slices, None and ... as indices, not " +
                           std::string(py::str(py::type::of(item).attr("__name__"))));
  }
  if (ellipses > 1) throw py::index_error("an index can only have a single ellipsis ('...')");
  if (consumed > t.ndim())
    throw py::index_error("too many indices for a tensor of shape " + t.shape().str() + ": " +
                          std::to_string(consumed) + " given");
  std::vector<std::int64_t> from(static_cast<std::size_t>(t.ndim()));
  for (std::int64_t d = t.ndim() - 1, step = 1; d >= 0; --d) {
    from[static_cast<std::size_t>(d)] = step;
    step *= t.shape()[static_cast<int>(d)];
  }
  IndexMap m;
  int axis = 0;
  auto keep_axis = [&] {
    m.shape.push_back(t.shape()[axis]);
    m.strides.push_back(from[static_cast<std::size_t>(axis)]);
    ++axis;
  };
  for (const py::handle item : items) {
    if (item.is_none()) {
      m.shape.push_back(1);
      m.strides.push_back(0);
    } else if (item.ptr() == Py_Ellipsis) {
      for (int k = t.ndim() - consumed; k > 0; --k) keep_axis();
    } else if (PyIndex_Check(item.ptr())) {
      const std::int64_t n = t.shape()[axis];
      const py::int_ index = py::reinterpret_steal<py::int_>(PyNumber_Index(item.ptr()));
      if (!index) throw py::error_already_set();
      const long long wide = PyLong_AsLongLong(index.ptr());
      if (wide == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        throw py::index_error("index " + py::repr(index).cast<std::string>() + " is out of range for axis " +
                              std::to_string(axis) + " of extent " + std::to_string(n));
      }
      std::int64_t i = wide;
      if (i < -n || i >= n)
        throw py::index_error("index " + std::to_string(i) + " is out of range for axis " + std::to_string(axis) +
                              " of extent " + std::to_string(n));
      if (i < 0) i += n;
      m.offset += i * from[static_cast<std::size_t>(axis)];
      ++axis;
    } else {
      std::size_t start = 0, stop = 0, step = 0, length = 0;
      const auto n = static_cast<std::size_t>(t.shape()[axis]);
      if (!py::reinterpret_borrow<py::slice>(item).compute(n, &start, &stop, &step, &length))
        throw py::error_already_set();
      // One element or none walks nowhere: stride 0 (a huge step would overflow).
      const auto st = length > 1 ? static_cast<std::int64_t>(static_cast<py::ssize_t>(step)) : 0;
      m.shape.push_back(static_cast<std::int64_t>(length));
      m.strides.push_back(from[static_cast<std::size_t>(axis)] * st);
      if (length > 0) m.offset += static_cast<std::int64_t>(start) * from[static_cast<std::size_t>(axis)];
      ++axis;
    }
  }
  while (axis < t.ndim()) keep_axis();
  return m;
}

/// Whether the map picks one run of consecutive elements in order (what
/// tide::strided returns as a view): every axis longer than 1 steps by the
/// elements of the axes after it.
bool picks_one_run(const IndexMap& m) {
  std::int64_t run = 1;
  for (int d = m.shape.ndim() - 1; d >= 0; --d) {
    const std::int64_t ext = m.shape[d];
    if (ext == 1) continue;
    if (m.strides[static_cast<std::size_t>(d)] != run) return false;
    run *= ext;
  }
  return true;
}

}  // namespace

namespace {

/// Rows `picked` of t seen as [lead, rest...], where lead is the product of
/// t's first k extents: one index_select.
Tensor take_rows(const Tensor& t, int k, const std::vector<std::int64_t>& picked, Loc loc) {
  std::vector<std::int64_t> dims{1};
  for (int d = 0; d < k; ++d) dims[0] *= t.shape()[d];
  for (int d = k; d < t.ndim(); ++d) dims.push_back(t.shape()[d]);
  const Tensor rows = reshape(t, dims);
  const Tensor index = from_vector(picked, Shape{static_cast<std::int64_t>(picked.size())}, t.device(), loc);
  return index_select(rows, 0, index, loc);
}

/// A mask's shape must be t's first mask.ndim() extents (torch's rule).
void check_mask_shape(const Tensor& t, const Shape& mask) {
  bool fits = mask.ndim() >= 1 && mask.ndim() <= t.ndim();
  for (int d = 0; fits && d < mask.ndim(); ++d) fits = mask[d] == t.shape()[d];
  if (!fits)
    throw py::index_error("tide: a mask of shape " + mask.str() + " must have t's leading extents (t is " +
                          t.shape().str() + "); tide.where(mask, t, 0) broadcasts instead");
}

/// t[mask] and t[indices]: the keys whose result is a copy of rows picked
/// by values, read to the host (a blocker, as in torch). A bool tensor or
/// numpy boolean array is a mask of t's leading extents; an integer tensor,
/// integer array or list holds indices along axis 0 (negative ones count
/// from the end), and the result has the index's shape followed by t's
/// other extents.
Tensor get_by_values(const Tensor& t, const py::object& key_in, Loc loc) {
  t.check_defined("t[index]");
  std::vector<std::int64_t> picked;
  py::object key = key_in;
  if (py::isinstance<Tensor>(key)) {
    const Tensor k = key.cast<Tensor>();
    k.check_defined("t[key]");
    if (is_floating(k.dtype()))
      throw py::index_error(std::string("tide: t[key] takes a bool tensor (a mask) or an integer one (indices), "
                                        "not ") + dtype_name(k.dtype()) + ": for a mask of nonzero values use t[key != 0]");
    if (k.dtype() == DType::b8) {
      check_mask_shape(t, k.shape());
      const std::vector<bool> v = k.to_vector<bool>(loc);
      for (std::size_t i = 0; i < v.size(); ++i)
        if (v[i]) picked.push_back(static_cast<std::int64_t>(i));
      return take_rows(t, k.ndim(), picked, loc);
    }
    key = to_numpy(k);  // indices: read as an integer array is
  }
  py::module_ np = py::module_::import("numpy");
  const py::array a = np.attr("asarray")(key).cast<py::array>();
  const char kind = numpy_type(a).kind;
  if (kind == 'b') {
    std::vector<std::int64_t> shape(a.shape(), a.shape() + a.ndim());
    check_mask_shape(t, Shape(shape.begin(), shape.end()));
    picked = np.attr("flatnonzero")(a).attr("astype")("int64").attr("tolist")().cast<std::vector<std::int64_t>>();
    return take_rows(t, static_cast<int>(a.ndim()), picked, loc);
  }
  if (kind != 'i' && kind != 'u' && a.size() != 0)
    throw py::type_error("tide: t[index]: an index array holds integers or booleans, not " +
                         std::string(py::str(a.dtype())));
  if (t.ndim() == 0) throw py::index_error("tide: a 0-d tensor has no axis to index");
  const std::int64_t n = t.shape()[0];
  for (const py::handle v : a.attr("reshape")(-1).attr("tolist")().cast<py::list>()) {
    std::int64_t i = 0;
    try {
      i = v.cast<std::int64_t>();
    } catch (const py::cast_error&) {
      throw py::index_error("index " + py::repr(v).cast<std::string>() + " is out of range for axis 0 of extent " +
                            std::to_string(n));
    }
    if (i < -n || i >= n)
      throw py::index_error("index " + std::to_string(i) + " is out of range for axis 0 of extent " + std::to_string(n));
    picked.push_back(i < 0 ? i + n : i);
  }
  const Tensor rows = take_rows(t, 1, picked, loc);
  std::vector<std::int64_t> dims(a.shape(), a.shape() + a.ndim());
  for (int d = 1; d < t.ndim(); ++d) dims.push_back(t.shape()[d]);
  return reshape(rows, dims);
}

}  // namespace

/// t[key]: a view sharing t's storage when the elements picked are one run
/// in order (t[i], t[a:b], t[i, a:b]), and a mirror of them otherwise (a
/// column, a step; tide tensors have no strides: see tide::as_strided). A
/// mask or a list of indices as the key: get_by_values, a copy.
Tensor get_item(const Tensor& t, const py::object& key) {
  const Loc loc = here();
  if (py::isinstance<Tensor>(key) || py::isinstance<py::array>(key) || py::isinstance<py::list>(key))
    return get_by_values(t, key, loc);
  const IndexMap m = index_map(t, key);
  return as_strided(t, m.shape, m.strides, m.offset, loc);
}

Tensor permuted_view(const Tensor& t, const std::vector<std::int64_t>& order) {
  t.check_defined("permute");
  const int nd = t.ndim();
  if (static_cast<int>(order.size()) != nd)
    throw ShapeError("permute: " + std::to_string(order.size()) + " axes given for shape " + t.shape().str());
  std::vector<std::int64_t> from(static_cast<std::size_t>(nd));  // t's row-major strides
  std::int64_t step = 1;
  for (int d = nd - 1; d >= 0; --d) {
    from[static_cast<std::size_t>(d)] = step;
    step *= t.shape()[d];
  }
  std::vector<bool> seen(static_cast<std::size_t>(nd), false);
  Shape shape;
  std::vector<std::int64_t> strides;
  for (std::int64_t a : order) {
    const std::int64_t ax = a < 0 ? a + nd : a;
    if (ax < 0 || ax >= nd || seen[static_cast<std::size_t>(ax)]) {
      std::string o;
      for (std::int64_t x : order) o += (o.empty() ? "" : ", ") + std::to_string(x);
      throw ShapeError("permute: order [" + o + "] is not a permutation of the " + std::to_string(nd) +
                       " axes of shape " + t.shape().str() + " (axis " + std::to_string(a) +
                       (ax < 0 || ax >= nd ? " is out of range)" : " appears twice)"));
    }
    seen[static_cast<std::size_t>(ax)] = true;
    shape.push_back(t.shape()[static_cast<int>(ax)]);
    strides.push_back(from[static_cast<std::size_t>(ax)]);
  }
  return as_strided(t, shape, strides, 0, here());
}

Tensor transposed_view(const Tensor& t, int a0, int a1) {
  t.check_defined("transpose");
  const int nd = t.ndim();
  for (int a : {a0, a1})
    if (a < -nd || a >= nd)
      throw ShapeError("transpose: axis " + std::to_string(a) + " is out of range for shape " + t.shape().str());
  std::vector<std::int64_t> order(static_cast<std::size_t>(nd));
  for (int d = 0; d < nd; ++d) order[static_cast<std::size_t>(d)] = d;
  std::swap(order[static_cast<std::size_t>(a0 < 0 ? a0 + nd : a0)], order[static_cast<std::size_t>(a1 < 0 ? a1 + nd : a1)]);
  return permuted_view(t, order);
}

namespace {

/// The value of t[key] = value as a tensor of t's dtype: a tensor as it is,
/// a number (Python's, numpy's: anything with __index__ or __float__) as
/// one element, exactly (an integer is not rounded through a double).
/// Checks first; pushes only once `make` is called.
std::function<Tensor()> assigned_value(const Tensor& t, const py::object& value, Shape& shape, Loc loc) {
  if (py::isinstance<Tensor>(value)) {
    const Tensor v = value.cast<Tensor>();
    v.check_defined("t[key] = value");
    if (v.dtype() != t.dtype())
      throw DTypeError(std::string("tide: t[key] = value: value is ") + dtype_name(v.dtype()) + ", t is " +
                       dtype_name(t.dtype()) + "; tide does not promote types");
    shape = v.shape();
    return [v] { return v; };
  }
  shape = Shape{};
  const Device dev = t.device();
  if (t.dtype() == DType::b8 && (PyIndex_Check(value.ptr()) || PyFloat_Check(value.ptr()))) {
    const bool v = py::cast<double>(py::float_(value)) != 0.0;  // True, 1, 2.5: true; 0, False: false
    return [v, dev, loc] { return full(Shape{}, v ? 1.0 : 0.0, {DType::b8, dev}, loc); };
  }
  if (PyIndex_Check(value.ptr()) && !PyFloat_Check(value.ptr())) {
    const auto i = value.cast<std::int64_t>();  // OverflowError beyond 64 bits
    return dispatch_dtype(t.dtype(), [&](auto tag) -> std::function<Tensor()> {
      using T = decltype(tag);
      if constexpr (std::is_integral_v<T>) {
        if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max())
          throw ValueError("tide: t[key] = " + std::to_string(i) + ": out of range for " + dtype_name(t.dtype()));
      }
      const T v = static_cast<T>(i);
      return [v, dev, loc] { return from_vector(std::vector<T>{v}, Shape{}, dev, loc); };
    });
  }
  if (!PyFloat_Check(value.ptr()) && !py::hasattr(value, "__float__"))
    throw py::type_error("tide: t[key] = value takes a tide.Tensor or a number, not " +
                         std::string(py::str(py::type::of(value).attr("__name__"))));
  const double d = py::float_(value).cast<double>();  // into an integer dtype, full() truncates or refuses
  return [d, dev, dt = t.dtype(), loc] { return full(Shape{}, d, {dt, dev}, loc); };
}

void set_masked(Tensor& t, const py::object& key, const py::object& value);

}  // namespace

/// t[key] = value: value (a tensor broadcast to t[key]'s shape, numpy's
/// rules, or a number) written into t's elements that the key picks: into
/// the view when they are one run, else in place along the key's strides (a
/// column, a step). Every check runs before anything is pushed. `t[key] += x`
/// lands here with the view itself, already updated, when the key is a
/// view's, or with the updated mirror of the key's elements otherwise,
/// which the engine keeps equal to them: nothing is left to write.
void set_item(Tensor& t, const py::object& key, const py::object& value) {
  if (py::isinstance<Tensor>(key) || py::isinstance<py::array>(key)) return set_masked(t, key, value);
  if (py::isinstance<py::list>(key))
    throw py::type_error("tide: t[[i, j, ...]] = value (assignment by a list of indices) is not supported: use a "
                         "mask (t[mask] = value) or tide.index_add");
  const Loc loc = here();
  const IndexMap m = index_map(t, key);
  Shape vs;
  const auto make = assigned_value(t, value, vs, loc);
  // numpy drops a value's leading axes of extent 1 beyond the target's.
  Shape fitted = vs;
  while (fitted.ndim() > m.shape.ndim() && fitted[0] == 1) fitted = fitted.without(0);
  if (broadcast_shapes(m.shape, fitted) != m.shape)
    throw ShapeError("tide: t[key] = value: a value of shape " + vs.str() + " does not broadcast to t[key]'s shape " +
                     m.shape.str());
  if (m.shape.numel() == 0) return;
  if (GradMode::enabled() && (t.requires_grad() || (py::isinstance<Tensor>(value) &&
                                                     value.cast<const Tensor&>().requires_grad())))
    throw UsageError("t[key] = value: an in-place write cannot be recorded for autograd, and a tensor involved "
                     "requires a gradient. Run it with grad mode off (tide.no_grad()), as an optimizer step does");
  const bool view_key = picks_one_run(m);
  Tensor view = view_key ? strided(t, m.shape, m.strides, m.offset, loc) : Tensor();  // a view: nothing pushed
  Tensor v = make();
  if (view_key && v.is_same(view) && v.storage()->offset() == view.storage()->offset() && v.shape() == view.shape())
    return;
  // The mirror t[key] made (t[:, j] += x: __getitem__, the add, then this):
  // it is kept equal to these very elements, so there is nothing to write.
  if (!view_key && is_mirror_of(v, t, m.shape, m.strides, m.offset)) return;
  if (fitted != vs) v = reshape(v, std::vector<std::int64_t>(fitted.begin(), fitted.end()));
  if (v.shape() != m.shape) {
    // numpy's broadcast as a gather with zero strides: the values as they
    // are (-0 stays -0), one op.
    std::vector<std::int64_t> st(static_cast<std::size_t>(m.shape.ndim()), 0);
    const int lead = m.shape.ndim() - v.ndim();
    std::int64_t step = 1;
    for (int d = v.ndim() - 1; d >= 0; --d) {
      if (v.shape()[d] != 1) st[static_cast<std::size_t>(d + lead)] = step;
      step *= v.shape()[d];
    }
    v = strided(v, m.shape, st, 0, loc);
  }
  if (view_key) {
    copy_(view, v, loc);
  } else {  // a column, a step: written in place along the key's strides, one op
    assign_strided_(t, m.shape, m.strides, m.offset, v, loc);
  }
}

namespace {

/// t[mask] = value, torch's masked assignment: value (a number, or a tensor
/// that broadcasts to t's shape) written where mask (a bool tensor or a
/// numpy boolean array, of t's leading extents as in reading) is true, over the rest of t's axes. Two ops,
/// t = where(mask, value, t) in place; nothing read back.
void set_masked(Tensor& t, const py::object& key, const py::object& value) {
  const Loc loc = here();
  t.check_defined("t[mask] = value");
  Tensor mask;
  if (py::isinstance<Tensor>(key)) {
    mask = key.cast<Tensor>();
    mask.check_defined("t[mask] = value");
    if (mask.dtype() != DType::b8)
      throw py::type_error(std::string("tide: t[key] = value takes a bool tensor (a mask), not ") +
                           dtype_name(mask.dtype()) + ": assignment by indices is not supported (use "
                           "tide.index_add), and a mask of nonzero values is key != 0");
  } else {
    py::array a = key.cast<py::array>();
    if (numpy_type(a).kind != 'b')
      throw py::type_error("tide: t[array] = value takes a boolean array (a mask), not " +
                           std::string(py::str(a.dtype())) + ": assignment by indices is not supported (use "
                           "tide.index_add)");
    mask = from_numpy(a, t.device().str());
  }
  check_mask_shape(t, mask.shape());
  // Over the axes after the mask's: where broadcasts it along them.
  std::vector<std::int64_t> dims(mask.shape().begin(), mask.shape().end());
  dims.resize(static_cast<std::size_t>(t.ndim()), 1);
  Shape vs;
  const auto make = assigned_value(t, value, vs, loc);
  if (broadcast_shapes(vs, t.shape()) != t.shape())
    throw ShapeError("tide: t[mask] = value: a value of shape " + vs.str() + " does not broadcast to t's shape " +
                     t.shape().str());
  if (GradMode::enabled() && (t.requires_grad() || (py::isinstance<Tensor>(value) &&
                                                     value.cast<const Tensor&>().requires_grad())))
    throw UsageError("t[mask] = value: an in-place write cannot be recorded for autograd, and a tensor involved "
                     "requires a gradient. Run it with grad mode off (tide.no_grad()), as an optimizer step does");
  if (t.numel() == 0) return;
  const Tensor w = where(reshape(mask, dims), make(), t, loc);
  copy_(t, w, loc);
}

}  // namespace


}  // namespace tide::python
