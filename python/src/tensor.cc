// tide.Tensor and the ops, for Python. Values cross into Python only at
// blockers (item, numpy, repr), which release the GIL while they wait.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <tide/core/assert.h>
#include <tide/tide.h>

#include "bindings.h"
#include "call_site.h"
#include "indexing.h"

namespace py = pybind11;

namespace tide::python {

void check_grad_dtype(bool requires_grad, DType dtype) {
  if (requires_grad && !is_floating(dtype))
    throw DTypeError(std::string("requires_grad: only floating tensors (f32, f64) have gradients, this one would be ") +
                     dtype_name(dtype));
}

DType parse_dtype(const std::string& s) {
  if (s == "f32" || s == "float32") return DType::f32;
  if (s == "f64" || s == "float64") return DType::f64;
  if (s == "i32" || s == "int32") return DType::i32;
  if (s == "i64" || s == "int64") return DType::i64;
  if (s == "bool" || s == "b8") return DType::b8;
  throw DTypeError("tide: dtype '" + s + "': expected f32, f64, i32, i64 or bool");
}

namespace {

Shape to_shape(const std::vector<std::int64_t>& dims) { return Shape(dims.begin(), dims.end()); }

TensorOptions options(const std::string& dtype, const std::string& device) {
  return {parse_dtype(dtype), Device::parse(device)};
}

py::tuple shape_of(const Tensor& t) {
  py::tuple out(static_cast<std::size_t>(t.ndim()));
  for (int i = 0; i < t.ndim(); ++i) out[static_cast<std::size_t>(i)] = t.shape()[i];
  return out;
}

template <typename T>
py::array to_numpy_as(const Tensor& t) {
  std::vector<T> v;
  const Loc loc = here();
  {
    py::gil_scoped_release nogil;
    v = t.to_vector<T>(loc);
  }
  std::vector<py::ssize_t> dims(t.shape().begin(), t.shape().end());
  // C-order strides given, not left to pybind11: it would compute them from
  // a dtype size it misreads under numpy 2 (see numpy_type).
  std::vector<py::ssize_t> strides(dims.size());
  py::ssize_t step = sizeof(T);
  for (std::size_t d = dims.size(); d-- > 0;) {
    strides[d] = step;
    step *= dims[d];
  }
  py::array_t<T> out(dims, strides);
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}


template <typename T>
Tensor from_array(const py::array& a, Device device) {
  // A C-contiguous array of native byte order: `a` itself when it is one,
  // else numpy's copy (of a strided, broadcast or byte-swapped array). A
  // copy numpy cannot make (memory) raises numpy's exception here.
  const py::array_t<T, py::array::c_style | py::array::forcecast> c(a);
  std::vector<std::int64_t> dims(c.shape(), c.shape() + c.ndim());
  std::vector<T> v(c.data(), c.data() + c.size());  // std::bad_alloc: MemoryError
  return from_vector(std::move(v), to_shape(dims), device, here());
}


py::object item(const Tensor& t) {
  if (t.dtype() == DType::b8) {
    bool v;
    const Loc loc = here();
    {
      py::gil_scoped_release nogil;
      v = t.item<bool>(loc);
    }
    return py::bool_(v);
  }
  if (!is_floating(t.dtype())) {
    std::int64_t v;
    const Loc loc = here();
    {
      py::gil_scoped_release nogil;
      v = t.item<std::int64_t>(loc);
    }
    return py::int_(v);
  }
  double v;
  const Loc loc = here();
  {
    py::gil_scoped_release nogil;
    v = t.item<double>(loc);
  }
  return py::float_(v);
}

std::string repr(const Tensor& t) {
  if (!t.defined()) return "tensor(undefined)";
  const Loc loc = here();  // the user's line prints (a blocker charged there)
  py::gil_scoped_release nogil;
  std::ostringstream os;
  os << Printed(t, loc);
  return os.str();
}

/// Extents from reshape's arguments: ints (t.reshape(2, -1)) or one
/// sequence of them (t.reshape([2, -1]), t.reshape((2, -1))).
std::vector<std::int64_t> dims_of(const py::args& args) {
  if (args.size() == 1 && !py::isinstance<py::int_>(args[0])) return args[0].cast<std::vector<std::int64_t>>();
  return args.cast<std::vector<std::int64_t>>();
}

}  // namespace

py::array to_numpy(const Tensor& t) {
  t.check_defined("numpy");
  switch (t.dtype()) {
    case DType::f32: return to_numpy_as<float>(t);
    case DType::f64: return to_numpy_as<double>(t);
    case DType::i32: return to_numpy_as<std::int32_t>(t);
    case DType::i64: return to_numpy_as<std::int64_t>(t);
    case DType::b8: return to_numpy_as<bool>(t);
  }
  TIDE_UNREACHABLE("numpy(): a DType this switch does not name");
}

NumpyType numpy_type(const py::handle& array_or_dtype) {
  const py::object dt = py::hasattr(array_or_dtype, "dtype") ? array_or_dtype.attr("dtype")
                                                             : py::reinterpret_borrow<py::object>(array_or_dtype);
  const std::string kind = py::str(dt.attr("kind"));
  return {kind.empty() ? '?' : kind[0], dt.attr("itemsize").cast<int>()};
}

Tensor from_numpy(const py::array& a, const std::string& device) {
  const Device d = Device::parse(device);
  const py::dtype dt = a.dtype();
  // By kind and size, so that either byte order is taken (and swapped).
  const auto [kind, size] = numpy_type(a);
  if (kind == 'f' && size == 4) return from_array<float>(a, d);
  if (kind == 'f' && size == 8) return from_array<double>(a, d);
  if (kind == 'i' && size == 4) return from_array<std::int32_t>(a, d);
  if (kind == 'i' && size == 8) return from_array<std::int64_t>(a, d);
  if (kind == 'b') return from_array<bool>(a, d);
  throw DTypeError("tide.from_numpy: tide holds float32, float64, int32, int64 and bool; got " +
                   py::cast<std::string>(py::str(static_cast<const py::handle&>(dt))) + " (convert it with .astype(...))");
}

void bind_tensors(py::module_& m) {
  // Scalar overloads first: a Python number fails the Tensor conversion
  // slowly, a Tensor fails the float conversion at once.
  py::class_<Tensor>(m, "Tensor")
      .def_property_readonly("shape", &shape_of)
      .def_property_readonly("dtype", [](const Tensor& t) { return std::string(dtype_name(t.dtype())); })
      .def_property_readonly("device", [](const Tensor& t) { return t.device().str(); })
      .def_property_readonly("ndim", &Tensor::ndim)
      .def("numel", &Tensor::numel)
      .def("__len__", [](const Tensor& t) {
        if (t.ndim() == 0) throw py::type_error("len() of a 0-d tensor");
        return t.shape()[0];
      })
      .def("item", &item, "the one value (a blocker: waits for it)")
      // As PyTorch: the value of a one-element tensor (a blocker), and an
      // error for any other, whose truth is ambiguous.
      .def("__bool__",
           [](const Tensor& t) {
             if (t.numel() != 1)
               throw py::value_error("the truth value of a tensor of " + std::to_string(t.numel()) +
                                     " elements is ambiguous (bool() takes a one-element tensor; reduce it first, "
                                     "with tide.sum or tide.max)");
             return py::bool_(item(t));
           })
      .def("__float__",
           [](const Tensor& t) {
             if (t.numel() != 1)
               throw py::type_error("float() takes a one-element tensor; this one has " + std::to_string(t.numel()));
             return py::float_(item(t));
           })
      .def("__int__",
           [](const Tensor& t) {
             if (t.numel() != 1)
               throw py::type_error("int() takes a one-element tensor; this one has " + std::to_string(t.numel()));
             return py::int_(item(t));
           })
      .def("numpy", &to_numpy, "a numpy copy of the values (a blocker: waits for them)")
      .def(
          "to",
          [](const Tensor& t, const std::string& what) {
            if (what == "f32" || what == "f64" || what == "i32" || what == "i64" || what == "float32" ||
                what == "float64" || what == "int32" || what == "int64" || what == "bool" || what == "b8")
              return to_dtype(t, parse_dtype(what), here());
            return copy_to(t, Device::parse(what), here());
          },
          py::arg("dtype_or_device"),
          "as torch's .to(): a dtype ('f32', 'int64', ...) converts (to_dtype), a device ('cpu:0', "
          "'cuda:0') copies there")
      .def("float", [](const Tensor& t) { return to_dtype(t, DType::f32, here()); }, "to_dtype(f32)")
      .def("double", [](const Tensor& t) { return to_dtype(t, DType::f64, here()); }, "to_dtype(f64)")
      .def("int", [](const Tensor& t) { return to_dtype(t, DType::i32, here()); }, "to_dtype(i32)")
      .def("long", [](const Tensor& t) { return to_dtype(t, DType::i64, here()); }, "to_dtype(i64)")
      .def("bool", [](const Tensor& t) { return to_dtype(t, DType::b8, here()); },
           "to_dtype(bool): nonzero (NaN too) is True")
      .def(
          "wait_to_read",
          [](const Tensor& t) -> const Tensor& {
            const Loc loc = here();
            py::gil_scoped_release nogil;
            return t.wait_to_read(loc);
          },
          py::return_value_policy::reference_internal, "barrier: waits for this tensor's producer only")
      .def("__repr__", &repr)
      .def("__str__", &repr)
      .def(
          "__array__",
          [](const Tensor& t, py::object dtype, py::object /*copy*/) {
            py::array a = to_numpy(t);
            return dtype.is_none() ? a : a.attr("astype")(dtype).cast<py::array>();
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none(),
          "numpy's view of the values: always a copy (a blocker: waits for them)")
      .def("__getitem__", &get_item,
           "basic indexing (ints, slices, None, ...): a view sharing the storage when the elements picked are "
           "one run in order (t[i], t[a:b], t[i, a:b]), otherwise a mirror (a column, a step): a tensor of its "
           "own that the engine keeps equal to them both ways, one copy op per write")
      .def("__setitem__", &set_item,
           "t[key] = value (a tensor broadcast to t[key]'s shape, or a number), for keys that pick one run "
           "in order; others raise IndexError. t[mask] = value with a tensor or numpy array as the key writes "
           "where the mask is nonzero (torch's masked assignment; the mask and value broadcast to t's shape)")
      .def(
          "reshape", [](const Tensor& t, const py::args& dims) { return reshape(t, dims_of(dims)); },
          "a view with other extents (one may be -1): shares the storage")
      .def(
          "view", [](const Tensor& t, const py::args& dims) { return reshape(t, dims_of(dims)); },
          "the same as reshape (every tide tensor is contiguous)")
      .def("flatten", [](const Tensor& t) { return flatten(t); }, "a one-axis view")
      .def(
          "squeeze",
          [](const Tensor& t, std::optional<int> axis) { return axis ? squeeze(t, *axis) : squeeze(t); },
          py::arg("axis") = py::none(), "a view without the axis (of extent 1), or without every axis of extent 1")
      .def("unsqueeze", [](const Tensor& t, int axis) { return unsqueeze(t, axis); }, py::arg("axis"),
           "a view with a new axis of extent 1 before `axis`")
      .def("transpose", &transposed_view, py::arg("axis0") = -2, py::arg("axis1") = -1,
           "two axes swapped, as a view (torch's): one sharing the storage when the order of the elements is "
           "unchanged, a mirror otherwise (see t[key])")
      .def(
          "permute", [](const Tensor& t, const py::args& order) { return permuted_view(t, dims_of(order)); },
          "the axes in the given order, as a view (torch's): one sharing the storage when the order of the "
          "elements is unchanged, a mirror otherwise (see t[key])")
      .def_property_readonly(
          "T",
          [](const Tensor& t) {
            if (t.ndim() < 2) return t;  // as numpy: nothing to reverse
            std::vector<std::int64_t> order;
            for (int d = t.ndim() - 1; d >= 0; --d) order.push_back(d);
            return permuted_view(t, order);
          },
          "the axes reversed (numpy's .T), as a view: a mirror when the order of the elements changes")
      .def("__add__", [](const Tensor& a, double s) { return add(a, s, here()); })
      .def("__add__", [](const Tensor& a, const Tensor& b) { return add(a, b, here()); })
      .def("__radd__", [](const Tensor& a, double s) { return add(a, s, here()); })
      .def("__sub__", [](const Tensor& a, double s) { return sub(a, s, here()); })
      .def("__sub__", [](const Tensor& a, const Tensor& b) { return sub(a, b, here()); })
      .def("__rsub__", [](const Tensor& a, double s) { return rsub(a, s, here()); })
      .def("__mul__", [](const Tensor& a, double s) { return mul(a, s, here()); })
      .def("__mul__", [](const Tensor& a, const Tensor& b) { return mul(a, b, here()); })
      .def("__rmul__", [](const Tensor& a, double s) { return mul(a, s, here()); })
      .def("__truediv__", [](const Tensor& a, double s) { return div(a, s, here()); })
      .def("__truediv__", [](const Tensor& a, const Tensor& b) { return div(a, b, here()); })
      .def("__rtruediv__", [](const Tensor& a, double s) { return rdiv(a, s, here()); })
      // In place, as numpy's and PyTorch's: `a += b` writes a's storage (b
      // broadcast to a's shape), so every handle of a sees it.
      .def("__iadd__", [](py::object self, double s) { add_(self.cast<Tensor&>(), s, here()); return self; })
      .def("__iadd__", [](py::object self, const Tensor& b) { add_(self.cast<Tensor&>(), b, here()); return self; })
      .def("__isub__", [](py::object self, double s) { add_(self.cast<Tensor&>(), -s, here()); return self; })
      .def("__isub__", [](py::object self, const Tensor& b) { sub_(self.cast<Tensor&>(), b, here()); return self; })
      .def("__imul__", [](py::object self, double s) { mul_(self.cast<Tensor&>(), s, here()); return self; })
      .def("__itruediv__", [](py::object self, double s) { div_(self.cast<Tensor&>(), s, here()); return self; })
      .def("__itruediv__", [](py::object self, const Tensor& b) { div_(self.cast<Tensor&>(), b, here()); return self; })
      .def("__imul__", [](py::object self, const Tensor& b) { mul_(self.cast<Tensor&>(), b, here()); return self; })
      .def("__neg__", [](const Tensor& a) { return neg(a, here()); })
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return matmul(a, b, here()); });

  const char* f32 = "f32";
  const char* cpu0 = "cpu:0";
  m.def("from_numpy", [](py::array a, const std::string& dev, bool rg) {
          const NumpyType nt = numpy_type(a);
          if (rg && nt.kind != 'f')
            check_grad_dtype(rg, nt.kind == 'b' ? DType::b8 : nt.itemsize == 4 ? DType::i32 : DType::i64);
          return from_numpy(a, dev).set_requires_grad(rg);
        },
        py::arg("array"), py::arg("device") = cpu0, py::arg("requires_grad") = false,
        "a tensor holding a copy of the array (float32, float64, int32, int64 or bool)");
  m.def(
      "to_dtype", [](const Tensor& t, const std::string& dt) { return to_dtype(t, parse_dtype(dt), here()); },
      py::arg("a"), py::arg("dtype"),
      "a's values as dtype: into an integer dtype truncated toward zero, NaN to 0, out of range saturated");
  m.def(
      "zeros",
      [](std::vector<std::int64_t> s, std::string dt, std::string dev, bool rg) {
        check_grad_dtype(rg, parse_dtype(dt));
        return zeros(to_shape(s), options(dt, dev), here()).set_requires_grad(rg);
      },
      py::arg("shape"), py::arg("dtype") = f32, py::arg("device") = cpu0, py::arg("requires_grad") = false);
  m.def(
      "ones",
      [](std::vector<std::int64_t> s, std::string dt, std::string dev, bool rg) {
        check_grad_dtype(rg, parse_dtype(dt));
        return ones(to_shape(s), options(dt, dev), here()).set_requires_grad(rg);
      },
      py::arg("shape"), py::arg("dtype") = f32, py::arg("device") = cpu0, py::arg("requires_grad") = false);
  m.def(
      "full",
      [](std::vector<std::int64_t> s, double v, std::string dt, std::string dev, bool rg) {
        check_grad_dtype(rg, parse_dtype(dt));
        return full(to_shape(s), v, options(dt, dev), here()).set_requires_grad(rg);
      },
      py::arg("shape"), py::arg("value"), py::arg("dtype") = f32, py::arg("device") = cpu0,
      py::arg("requires_grad") = false);
  m.def(
      "arange",
      [](double start, std::optional<double> stop, double step, std::string dt, std::string dev) {
        if (!stop) return arange(0, start, step, options(dt, dev), here());
        return arange(start, *stop, step, options(dt, dev), here());
      },
      py::arg("start"), py::arg("stop") = py::none(), py::arg("step") = 1.0, py::arg("dtype") = f32,
      py::arg("device") = cpu0);
  m.def(
      "rand",
      [](std::vector<std::int64_t> s, std::string dt, std::string dev, std::optional<std::uint64_t> seed, bool rg) {
        check_grad_dtype(rg, parse_dtype(dt));
        return rand(to_shape(s), options(dt, dev), RandomOptions{seed}, here()).set_requires_grad(rg);
      },
      py::arg("shape"), py::arg("dtype") = f32, py::arg("device") = cpu0, py::arg("seed") = py::none(),
      py::arg("requires_grad") = false);
  m.def(
      "randn",
      [](std::vector<std::int64_t> s, std::string dt, std::string dev, std::optional<std::uint64_t> seed, bool rg) {
        check_grad_dtype(rg, parse_dtype(dt));
        return randn(to_shape(s), options(dt, dev), RandomOptions{seed}, here()).set_requires_grad(rg);
      },
      py::arg("shape"), py::arg("dtype") = f32, py::arg("device") = cpu0, py::arg("seed") = py::none(),
      py::arg("requires_grad") = false);
  m.def("manual_seed", [](std::uint64_t seed) { current_engine().manual_seed(seed); }, py::arg("seed"));

  m.def(
      "broadcast_shapes",
      [](std::vector<std::int64_t> a, std::vector<std::int64_t> b) {
        const Shape s = broadcast_shapes(to_shape(a), to_shape(b));
        return std::vector<std::int64_t>(s.begin(), s.end());
      },
      py::arg("a"), py::arg("b"), "the shape of a op b under numpy's broadcasting");
  m.def("reshape", [](const Tensor& t, std::vector<std::int64_t> dims) { return reshape(t, dims); }, py::arg("a"), py::arg("shape"));
  m.def("transpose", &transposed_view, py::arg("a"), py::arg("axis0") = -2, py::arg("axis1") = -1,
        "a with two axes swapped, as a view (torch.transpose): see Tensor.transpose");
  m.def("add", [](const Tensor& a, const Tensor& b) { return add(a, b, here()); }, py::arg("a"), py::arg("b"));
  m.def("sub", [](const Tensor& a, const Tensor& b) { return sub(a, b, here()); }, py::arg("a"), py::arg("b"));
  m.def("mul", [](const Tensor& a, const Tensor& b) { return mul(a, b, here()); }, py::arg("a"), py::arg("b"));
  m.def("div", [](const Tensor& a, const Tensor& b) { return div(a, b, here()); }, py::arg("a"), py::arg("b"));
  m.def("eq", [](const Tensor& a, const Tensor& b) { return eq(a, b, here()); }, py::arg("a"), py::arg("b"));
  m.def("neg", [](const Tensor& a) { return neg(a, here()); }, py::arg("a"));
  m.def("exp", [](const Tensor& a) { return exp(a, here()); }, py::arg("a"));
  m.def("log", [](const Tensor& a) { return log(a, here()); }, py::arg("a"));
  m.def("relu", [](const Tensor& a) { return relu(a, here()); }, py::arg("a"));
  m.def(
      "sum", [](const Tensor& a, std::optional<int> axis) { return axis ? sum(a, *axis, here()) : sum(a, here()); }, py::arg("a"),
      py::arg("axis") = py::none());
  m.def(
      "mean", [](const Tensor& a, std::optional<int> axis) { return axis ? mean(a, *axis, here()) : mean(a, here()); }, py::arg("a"),
      py::arg("axis") = py::none());
  m.def(
      "max", [](const Tensor& a, std::optional<int> axis) { return axis ? max(a, *axis, here()) : max(a, here()); }, py::arg("a"),
      py::arg("axis") = py::none());
  m.def(
      "argmax", [](const Tensor& a, int axis, const std::string& dt) { return argmax(a, axis, parse_dtype(dt), here()); },
      py::arg("a"), py::arg("axis"), py::arg("dtype") = "i64",
      "the index of the largest element along axis: i64 (as torch's) or i32");
  m.def(
      "min", [](const Tensor& a, std::optional<int> axis) { return axis ? min(a, *axis, here()) : min(a, here()); },
      py::arg("a"), py::arg("axis") = py::none());
  m.def(
      "argmin", [](const Tensor& a, int axis, const std::string& dt) { return argmin(a, axis, parse_dtype(dt), here()); },
      py::arg("a"), py::arg("axis"), py::arg("dtype") = "i64",
      "the index of the smallest element along axis: i64 (as torch's) or i32");
  m.def(
      "matmul", [](const Tensor& a, const Tensor& b, bool ta, bool tb) { return matmul(a, b, ta, tb, here()); }, py::arg("a"),
      py::arg("b"), py::arg("trans_a") = false, py::arg("trans_b") = false);
  m.def(
      "copy_to", [](const Tensor& t, const std::string& dev) { return copy_to(t, Device::parse(dev), here()); },
      py::arg("tensor"), py::arg("device"));
  m.def("linear", [](const Tensor& x, const Tensor& w, const Tensor& b) { return linear(x, w, b, here()); }, py::arg("x"), py::arg("w"), py::arg("b"));
  m.def("relu_backward", [](const Tensor& dy, const Tensor& x) { return relu_backward(dy, x, here()); }, py::arg("dy"), py::arg("x"));
  m.def(
      "softmax_cross_entropy",
      [](const Tensor& logits, const Tensor& labels) {
        SoftmaxCrossEntropy r = softmax_cross_entropy(logits, labels, here());
        return py::make_tuple(r.loss, r.probs);
      },
      py::arg("logits"), py::arg("labels"), "(loss, probs): the mean cross-entropy of softmax(logits) and the softmax");
  m.def("softmax_cross_entropy_backward",
        [](const Tensor& probs, const Tensor& labels) { return softmax_cross_entropy_backward(probs, labels, here()); });
  m.def("linear_backward_weight", [](const Tensor& dy, const Tensor& x) { return linear_backward_weight(dy, x, here()); }, py::arg("dy"), py::arg("x"));
  m.def("linear_backward_bias", [](const Tensor& dy) { return linear_backward_bias(dy, here()); }, py::arg("dy"));
  m.def("linear_backward_input", [](const Tensor& dy, const Tensor& w) { return linear_backward_input(dy, w, here()); }, py::arg("dy"), py::arg("w"));
  m.def("add_", [](Tensor& a, const Tensor& b) { add_(a, b, here()); }, py::arg("a"), py::arg("b"), "a += b, in place");
  m.def("copy_", [](Tensor& dst, const Tensor& src) { copy_(dst, src, here()); }, py::arg("dst"), py::arg("src"),
        "dst = src, in place (same shape and dtype, any devices)");
  m.def(
      "adam_step_",
      [](Tensor& p, const Tensor& g, Tensor& m1, Tensor& m2, std::int64_t step, double lr, double beta1, double beta2,
         double eps, double wd) { adam_step_(p, g, m1, m2, step, AdamOptions{lr, beta1, beta2, eps, wd}, here()); },
      py::arg("param"), py::arg("grad"), py::arg("m"), py::arg("v"), py::arg("step"), py::arg("lr") = 1e-3,
      py::arg("beta1") = 0.9, py::arg("beta2") = 0.999, py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0,
      "torch.optim.Adam's update of param, with its moments m and v, at step (from 1)");
  m.def(
      "sgd_step_",
      [](Tensor& p, const Tensor& g, Tensor& v, double lr, double momentum, double wd) {
        sgd_step_(p, g, v, SgdOptions{lr, momentum, wd}, here());
      },
      py::arg("param"), py::arg("grad"), py::arg("velocity"), py::arg("lr"), py::arg("momentum") = 0.0,
      py::arg("weight_decay") = 0.0, "param -= lr * (velocity = momentum * velocity + grad + weight_decay * param)");
  // The multi-tensor forms: lists of parameters, gradients and states, as
  // few ops as devices and dtypes allow (one launch per op on a GPU).
  m.def(
      "sgd_step_",
      [](std::vector<Tensor> p, const std::vector<Tensor>& g, std::vector<Tensor> v, double lr, double momentum,
         double wd) { sgd_step_(p, g, v, SgdOptions{lr, momentum, wd}, here()); },
      py::arg("params"), py::arg("grads"), py::arg("velocities"), py::arg("lr"), py::arg("momentum") = 0.0,
      py::arg("weight_decay") = 0.0, "sgd_step_ over lists of parameters, in one op per device and dtype");
  m.def(
      "adam_step_",
      [](std::vector<Tensor> p, const std::vector<Tensor>& g, std::vector<Tensor> m1, std::vector<Tensor> m2,
         std::int64_t step, double lr, double beta1, double beta2, double eps, double wd) {
        adam_step_(p, g, m1, m2, step, AdamOptions{lr, beta1, beta2, eps, wd}, here());
      },
      py::arg("params"), py::arg("grads"), py::arg("m"), py::arg("v"), py::arg("step"), py::arg("lr") = 1e-3,
      py::arg("beta1") = 0.9, py::arg("beta2") = 0.999, py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0,
      "adam_step_ over lists of parameters at one step, in one op per device and dtype");
}

}  // namespace tide::python
