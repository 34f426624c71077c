// What a PyTorch user writes first, on tide.Tensor and in the tide module:
// methods for the reductions and the math (t.sum(), t.mean(dim, keepdim),
// t.pow(2), t ** 2, t > 0, t.tolist(), t.size(0), ...), the math functions
// (tide.sqrt, tide.sigmoid, tide.gt, ...), tide.cat and tide.stack,
// tide.softmax, tide.tensor(data) and the *_like creators. Each calls the C++ op once; nothing here computes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include <tide/tide.h>

#include "bindings.h"
#include "call_site.h"

namespace py = pybind11;

namespace tide::python {

namespace {

/// `dim` in [-ndim, ndim), as an axis in [0, ndim); IndexError otherwise.
int axis_of(const Tensor& t, int dim) {
  const int nd = t.ndim();
  if (dim < -nd || dim >= nd)
    throw py::index_error("dimension " + std::to_string(dim) + " is out of range for a tensor of " +
                          std::to_string(nd) + " dimensions");
  return dim < 0 ? dim + nd : dim;
}

/// A reduction over everything (dim None) or along one axis, the axis kept
/// with extent 1 when keepdim (torch's and numpy's keepdims).
template <typename All, typename Along>
Tensor reduce(const Tensor& t, std::optional<int> dim, bool keepdim, All all, Along along) {
  const Loc loc = here();
  if (!dim) {
    Tensor r = all(t, loc);
    if (!keepdim) return r;
    std::vector<std::int64_t> ones(static_cast<std::size_t>(t.ndim()), 1);
    return reshape(r, ones);
  }
  const int axis = axis_of(t, *dim);
  Tensor r = along(t, axis, loc);
  return keepdim ? unsqueeze(r, axis) : r;
}

Tensor sum_of(const Tensor& t, std::optional<int> dim, bool keepdim) {
  return reduce(t, dim, keepdim, [](const Tensor& a, Loc l) { return sum(a, l); },
                [](const Tensor& a, int ax, Loc l) { return sum(a, ax, l); });
}
Tensor any_of(const Tensor& t, std::optional<int> dim, bool keepdim) {
  return reduce(t, dim, keepdim, [](const Tensor& a, Loc l) { return any(a, l); },
                [](const Tensor& a, int ax, Loc l) { return any(a, ax, l); });
}
Tensor all_of(const Tensor& t, std::optional<int> dim, bool keepdim) {
  return reduce(t, dim, keepdim, [](const Tensor& a, Loc l) { return all(a, l); },
                [](const Tensor& a, int ax, Loc l) { return all(a, ax, l); });
}

/// &, |, ^ between bool tensors (or a bool tensor and a Python bool), as
/// torch's logical reading of them; integers are refused rather than
/// combined bit by bit.
Tensor bool_operand(const Tensor& like, const py::object& b, const char* op) {
  if (py::isinstance<py::bool_>(b)) return full(Shape{}, b.cast<bool>() ? 1.0 : 0.0, {DType::b8, like.device()}, here());
  if (!py::isinstance<Tensor>(b))
    throw py::type_error(std::string("tide: ") + op + " takes bool tensors (or True/False), not " +
                         py::str(py::type::of(b)).cast<std::string>());
  return b.cast<Tensor>();
}
void check_bools(const Tensor& a, const Tensor& b, const char* op) {
  a.check_defined(op);
  b.check_defined(op);
  if (a.dtype() != DType::b8 || b.dtype() != DType::b8)
    throw DTypeError(std::string("tide: ") + op + " is logical, between bool tensors (" + dtype_name(a.dtype()) +
                     " and " + dtype_name(b.dtype()) + " given): bitwise integer ops are not supported; "
                     "for nonzero values use tide.logical_and/logical_or/logical_xor");
}
template <typename Op>
auto logical(const char* op, Op f) {
  return [op, f](const Tensor& a, const py::object& b) {
    const Tensor y = bool_operand(a, b, op);
    check_bools(a, y, op);
    return f(a, y, here());
  };
}

Tensor mean_of(const Tensor& t, std::optional<int> dim, bool keepdim) {
  return reduce(t, dim, keepdim, [](const Tensor& a, Loc l) { return mean(a, l); },
                [](const Tensor& a, int ax, Loc l) { return mean(a, ax, l); });
}

/// t.max(): the largest element; t.max(dim): (values, indices), as torch's
/// (indices in i64); and min likewise.
template <bool Max>
py::object extreme_of(const Tensor& t, std::optional<int> dim, bool keepdim) {
  const Tensor v = reduce(t, dim, keepdim, [](const Tensor& a, Loc l) { return Max ? max(a, l) : min(a, l); },
                          [](const Tensor& a, int ax, Loc l) { return Max ? max(a, ax, l) : min(a, ax, l); });
  if (!dim) return py::cast(v);
  const int axis = axis_of(t, *dim);
  Tensor i = Max ? argmax(t, axis, DType::i64, here()) : argmin(t, axis, DType::i64, here());
  if (keepdim) i = unsqueeze(i, axis);
  return py::make_tuple(v, i);
}
py::object max_of(const Tensor& t, std::optional<int> dim, bool keepdim) {
  return extreme_of<true>(t, dim, keepdim);
}
py::object min_of(const Tensor& t, std::optional<int> dim, bool keepdim) {
  return extreme_of<false>(t, dim, keepdim);
}

/// A tensor or a Python number as the other operand of a binary op.
template <typename WithTensor, typename WithScalar>
Tensor either(const Tensor& a, const py::object& b, WithTensor wt, WithScalar ws) {
  if (py::isinstance<Tensor>(b)) return wt(a, b.cast<const Tensor&>(), here());
  if (PyFloat_Check(b.ptr()) || PyIndex_Check(b.ptr()) || py::hasattr(b, "__float__"))
    return ws(a, py::float_(b).cast<double>(), here());
  throw py::type_error("expected a tide.Tensor or a number, got " +
                       std::string(py::str(py::type::of(b).attr("__name__"))));
}

/// t == b, t != b: element by element against a tensor or a number;
/// NotImplemented for anything else, so that Python falls back to identity.
py::object compare_or_not(const Tensor& a, const py::object& b, bool equal) {
  // An array of several elements (numpy's) is not a number: NotImplemented
  // lets numpy compare it with the tensor (read through __array__), as it
  // does with the operands the other way round.
  if (!py::isinstance<Tensor>(b)) {
    const bool array = py::hasattr(b, "ndim") && py::int_(b.attr("ndim")).cast<long>() != 0;
    const bool number = PyFloat_Check(b.ptr()) || PyIndex_Check(b.ptr()) || py::hasattr(b, "__float__");
    if (array || !number || b.is_none() || py::isinstance<py::str>(b))
      return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  }
  if (equal)
    return py::cast(either(a, b, [](const Tensor& x, const Tensor& y, Loc l) { return eq(x, y, l); },
                           [](const Tensor& x, double s, Loc l) { return eq(x, s, l); }));
  return py::cast(either(a, b, [](const Tensor& x, const Tensor& y, Loc l) { return ne(x, y, l); },
                         [](const Tensor& x, double s, Loc l) { return ne(x, s, l); }));
}

/// The in-place methods built of two ops check first, so that a refusal
/// queues nothing.
void refuse_recorded(const Tensor& t, const char* name) {
  t.check_defined(name);
  if (GradMode::enabled() && t.requires_grad())
    throw UsageError(std::string(name) + ": an in-place write cannot be recorded for autograd, and this tensor "
                     "requires a gradient. Run it with grad mode off (tide.no_grad()), as an optimizer step does");
}

/// An in-place method taking a tensor or a number, returning the tensor.
template <typename WithTensor, typename WithScalar>
auto in_place(WithTensor wt, WithScalar ws) {
  return [wt, ws](py::object self, const py::object& b) {
    Tensor& t = self.cast<Tensor&>();
    const Loc loc = here();
    if (py::isinstance<Tensor>(b)) wt(t, b.cast<const Tensor&>(), loc);
    else if (PyFloat_Check(b.ptr()) || PyIndex_Check(b.ptr()) || py::hasattr(b, "__float__"))
      ws(t, py::float_(b).cast<double>(), loc);
    else
      throw py::type_error("tide: an in-place op takes a tide.Tensor or a number, not " +
                           std::string(py::str(py::type::of(b).attr("__name__"))));
    return self;
  };
}

#define TIDE_EITHER(op)                                                                  \
  [](const Tensor& a, const py::object& b) {                                             \
    return either(                                                                       \
        a, b, [](const Tensor& x, const Tensor& y, Loc l) { return op(x, y, l); },       \
        [](const Tensor& x, double s, Loc l) { return op(x, s, l); });                   \
  }

/// tide.tensor(data): numpy reads the data (nested lists, numbers, arrays,
/// anything with __array__). Without a dtype, an array (numpy's, a tide
/// tensor) keeps its own dtype where tide has it, and Python data becomes
/// f32 (floats) or i64 (integers), as torch.tensor does.
Tensor tensor_of(const py::object& data, std::optional<std::string> dtype, const std::string& device,
                 bool requires_grad) {
  py::module_ np = py::module_::import("numpy");
  const bool typed = py::hasattr(data, "dtype") || py::hasattr(data, "__array__");
  py::object array = np.attr("asarray")(data);
  const std::string kind = py::str(array.attr("dtype").attr("kind"));
  const int size = array.attr("dtype").attr("itemsize").cast<int>();
  DType target;
  if (dtype) {
    target = parse_dtype(*dtype);
  } else if (kind == "f") {
    target = typed && size == 8 ? DType::f64 : DType::f32;
  } else if (kind == "i" || kind == "u") {
    target = typed && kind == "i" && size == 4 ? DType::i32 : DType::i64;
  } else if (kind == "b") {
    target = DType::b8;
  } else {
    throw DTypeError("tide.tensor: data of numpy kind '" + kind +
                     "' has no tide dtype (f32, f64, i32, i64, bool); pass numbers");
  }
  check_grad_dtype(requires_grad, target);
  const char* np_name = target == DType::f32 ? "float32" : target == DType::f64 ? "float64"
                        : target == DType::i32 ? "int32" : target == DType::b8 ? "bool" : "int64";
  array = array.attr("astype")(np_name, py::arg("order") = "C", py::arg("copy") = false);  // 0-d stays 0-d
  return py::module_::import("tide").attr("from_numpy")(array, device, requires_grad).cast<Tensor>();
}

/// zeros_like and friends: t's shape, and its dtype and device unless given.
TensorOptions like(const Tensor& t, const std::optional<std::string>& dtype,
                   const std::optional<std::string>& device) {
  t.check_defined("*_like");
  TensorOptions o{t.dtype(), t.device()};
  if (dtype) o.dtype = parse_dtype(*dtype);
  if (device) o.device = Device::parse(*device);
  return o;
}

}  // namespace

void bind_tensor_math(py::module_& m) {
  auto tensor = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  const auto none = py::none();
  tensor
      .def("sum", &sum_of, py::arg("dim") = none, py::arg("keepdim") = false,
           "the sum of every element, or along dim (kept with extent 1 when keepdim)")
      // torch's method forms of the operators, and its in-place methods
      // (each returns the tensor itself; refused on a tensor that needs a
      // gradient while grad mode is on). Through any view, a mirror (t[:, j],
      // t[::2], t.T) included, they reach the tensor viewed.
      .def("add", TIDE_EITHER(add), py::arg("other"))
      .def("sub", TIDE_EITHER(sub), py::arg("other"))
      .def("mul", TIDE_EITHER(mul), py::arg("other"))
      .def("div", TIDE_EITHER(div), py::arg("other"))
      .def("eq", TIDE_EITHER(eq), py::arg("other"))
      .def("ne", TIDE_EITHER(ne), py::arg("other"))
      .def("gt", TIDE_EITHER(gt), py::arg("other"))
      .def("ge", TIDE_EITHER(ge), py::arg("other"))
      .def("lt", TIDE_EITHER(lt), py::arg("other"))
      .def("le", TIDE_EITHER(le), py::arg("other"))
      .def("add_", in_place([](Tensor& t, const Tensor& b, Loc l) { add_(t, b, l); },
                            [](Tensor& t, double s, Loc l) { add_(t, s, l); }), py::arg("other"))
      .def("sub_", in_place([](Tensor& t, const Tensor& b, Loc l) { sub_(t, b, l); },
                            [](Tensor& t, double s, Loc l) { add_(t, -s, l); }), py::arg("other"))
      .def("mul_", in_place([](Tensor& t, const Tensor& b, Loc l) { mul_(t, b, l); },
                            [](Tensor& t, double s, Loc l) { mul_(t, s, l); }), py::arg("other"))
      .def("div_", in_place([](Tensor& t, const Tensor& b, Loc l) { div_(t, b, l); },
                            [](Tensor& t, double s, Loc l) { div_(t, s, l); }), py::arg("other"))
      .def("fill_", [](py::object self, double v) {
             Tensor& t = self.cast<Tensor&>();
             refuse_recorded(t, "fill_");
             copy_(t, full(t.shape(), v, {t.dtype(), t.device()}, here()), here());
             return self;
           }, py::arg("value"))
      .def("zero_", [](py::object self) {
             Tensor& t = self.cast<Tensor&>();
             refuse_recorded(t, "zero_");
             copy_(t, zeros(t.shape(), {t.dtype(), t.device()}, here()), here());
             return self;
           })
      .def("copy_", [](py::object self, const Tensor& src) {
             copy_(self.cast<Tensor&>(), src, here());
             return self;
           }, py::arg("src"), "src's values into self (same shape and dtype; across devices too)")
      .def("masked_fill", [](const Tensor& t, const Tensor& mask, double v) { return where(mask, v, t, here()); },
           py::arg("mask"), py::arg("value"), "value where mask (broadcast) is true, else self's values")
      .def("masked_fill_", [](py::object self, const Tensor& mask, double v) {
             Tensor& t = self.cast<Tensor&>();
             refuse_recorded(t, "masked_fill_");
             mask.check_defined("masked_fill_");
             if (broadcast_shapes(mask.shape(), t.shape()) != t.shape())
               throw ShapeError("masked_fill_: a mask of shape " + mask.shape().str() +
                                " does not broadcast to the tensor's shape " + t.shape().str());
             copy_(t, where(mask, v, t, here()), here());
             return self;
           }, py::arg("mask"), py::arg("value"))
      .def("where", [](const Tensor& t, const Tensor& cond, const py::object& other) {
             return either(t, other, [&](const Tensor& u, const Tensor& v, Loc l) { return where(cond, u, v, l); },
                           [&](const Tensor& u, double s, Loc l) { return where(cond, u, s, l); });
           }, py::arg("condition"), py::arg("other"), "self where condition, else other (torch's Tensor.where)")
      .def("type_as", [](const Tensor& t, const Tensor& other) { return to_dtype(t, other.dtype(), here()); },
           py::arg("other"))
      .def("contiguous", [](py::object self) -> py::object {
             const Tensor& t = self.cast<const Tensor&>();
             return is_mirror(t) ? py::cast(copy_to(t, t.device(), here())) : self;
           },
           "self, or a copy when self is a mirror (a column, a step, a transpose; see t[key]): the copy follows "
           "nothing, as torch's contiguous copy")
      .def("is_contiguous", [](const Tensor& t) { return !is_mirror(t); },
           "False for a mirror (a column, a step, a transpose: see t[key]), whose elements are not one run of "
           "the tensor it views; True otherwise")
      .def("any", &any_of, py::arg("dim") = none, py::arg("keepdim") = false,
           "whether any element (along dim) is nonzero: a bool tensor")
      .def("all", &all_of, py::arg("dim") = none, py::arg("keepdim") = false,
           "whether every element (along dim) is nonzero: a bool tensor")
      .def("__and__", logical("&", [](const Tensor& a, const Tensor& b, Loc l) { return logical_and(a, b, l); }))
      .def("__rand__", logical("&", [](const Tensor& a, const Tensor& b, Loc l) { return logical_and(b, a, l); }))
      .def("__or__", logical("|", [](const Tensor& a, const Tensor& b, Loc l) { return logical_or(a, b, l); }))
      .def("__ror__", logical("|", [](const Tensor& a, const Tensor& b, Loc l) { return logical_or(b, a, l); }))
      .def("__xor__", logical("^", [](const Tensor& a, const Tensor& b, Loc l) { return logical_xor(a, b, l); }))
      .def("__rxor__", logical("^", [](const Tensor& a, const Tensor& b, Loc l) { return logical_xor(b, a, l); }))
      .def("__invert__",
           [](const Tensor& a) {
             check_bools(a, a, "~");
             return logical_not(a, here());
           })
      .def("logical_not", [](const Tensor& a) { return logical_not(a, here()); })
      .def("mean", &mean_of, py::arg("dim") = none, py::arg("keepdim") = false,
           "the mean of every element, or along dim (kept with extent 1 when keepdim)")
      .def("max", &max_of, py::arg("dim") = none, py::arg("keepdim") = false,
           "the largest element; along dim, (values, indices) as torch's (indices in i64)")
      .def("argmax", [](const Tensor& t, int dim) { return argmax(t, axis_of(t, dim), DType::i64, here()); },
           py::arg("dim"), "the index of the largest element along dim (i64, as torch's)")
      .def("min", &min_of, py::arg("dim") = none, py::arg("keepdim") = false,
           "the smallest element; along dim, (values, indices) as torch's (indices in i64)")
      .def("argmin", [](const Tensor& t, int dim) { return argmin(t, axis_of(t, dim), DType::i64, here()); },
           py::arg("dim"), "the index of the smallest element along dim (i64, as torch's)")
      .def("exp", [](const Tensor& t) { return exp(t, here()); })
      .def("log", [](const Tensor& t) { return log(t, here()); })
      .def("neg", [](const Tensor& t) { return neg(t, here()); })
      .def("relu", [](const Tensor& t) { return relu(t, here()); })
      .def("sqrt", [](const Tensor& t) { return sqrt(t, here()); })
      .def("tanh", [](const Tensor& t) { return tanh(t, here()); })
      .def("sigmoid", [](const Tensor& t) { return sigmoid(t, here()); })
      .def("abs", [](const Tensor& t) { return abs(t, here()); })
      .def(
          "clamp",
          [](const Tensor& t, std::optional<double> lo, std::optional<double> hi) { return clamp(t, lo, hi, here()); },
          py::arg("min") = none, py::arg("max") = none, "self limited to [min, max] (either may be left out)")
      .def("maximum", TIDE_EITHER(maximum), py::arg("other"))
      .def("minimum", TIDE_EITHER(minimum), py::arg("other"))
      .def("softmax", [](const Tensor& t, int dim) { return softmax(t, dim, here()); }, py::arg("dim"))
      .def("log_softmax", [](const Tensor& t, int dim) { return log_softmax(t, dim, here()); }, py::arg("dim"))
      .def("pow", TIDE_EITHER(pow), py::arg("exponent"), "self ** exponent (a tensor or a number)")
      .def("__pow__", TIDE_EITHER(pow))
      .def("__rpow__", [](const Tensor& a, double s) { return rpow(a, s, here()); })
      // == and != compare element by element, as torch's; anything but a
      // tensor or a number (None, a string) compares as Python objects do.
      // Hashing stays by identity, so tensors remain usable as dict keys.
      .def("__eq__", [](const Tensor& a, const py::object& b) { return compare_or_not(a, b, true); })
      .def("__ne__", [](const Tensor& a, const py::object& b) { return compare_or_not(a, b, false); })
      .def("__hash__", [](const py::object& self) { return PyBaseObject_Type.tp_hash(self.ptr()); })
      .def("__gt__", TIDE_EITHER(gt))
      .def("__ge__", TIDE_EITHER(ge))
      .def("__lt__", TIDE_EITHER(lt))
      .def("__le__", TIDE_EITHER(le))
      .def("mm", [](const Tensor& a, const Tensor& b) { return matmul(a, b, false, false, here()); }, py::arg("other"))
      .def("matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b, false, false, here()); },
           py::arg("other"))
      .def("clone", [](const Tensor& t) { return copy_to(t, t.device(), here()); },
           "a copy with storage of its own (differentiable, as torch's)")
      .def("dim", &Tensor::ndim, "the number of dimensions")
      .def(
          "size",
          [](const Tensor& t, std::optional<int> dim) -> py::object {
            if (dim) return py::int_(t.shape()[axis_of(t, *dim)]);
            return py::tuple(py::cast(std::vector<std::int64_t>(t.shape().begin(), t.shape().end())));
          },
          py::arg("dim") = none, "the shape (a tuple), or the extent of one dimension")
      .def(
          "tolist", [](const Tensor& t) { return py::module_::import("numpy").attr("asarray")(t).attr("tolist")(); },
          "the values as nested Python lists (a blocker)");

  m.def("pow", TIDE_EITHER(pow), py::arg("a"), py::arg("exponent"), "a ** exponent, floating dtypes");
  m.def("sqrt", [](const Tensor& a) { return sqrt(a, here()); }, py::arg("a"));
  m.def("tanh", [](const Tensor& a) { return tanh(a, here()); }, py::arg("a"));
  m.def("sigmoid", [](const Tensor& a) { return sigmoid(a, here()); }, py::arg("a"));
  m.def("abs", [](const Tensor& a) { return abs(a, here()); }, py::arg("a"));
  m.def("ne", TIDE_EITHER(ne), py::arg("a"), py::arg("b"), "a bool tensor: True where a != b");
  m.def("logical_and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b, here()); }, py::arg("a"),
        py::arg("b"), "True where both are nonzero (NaN too), broadcast");
  m.def("logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b, here()); }, py::arg("a"),
        py::arg("b"), "True where either is nonzero (NaN too), broadcast");
  m.def("logical_xor", [](const Tensor& a, const Tensor& b) { return logical_xor(a, b, here()); }, py::arg("a"),
        py::arg("b"), "True where exactly one is nonzero (NaN too), broadcast");
  m.def("logical_not", [](const Tensor& a) { return logical_not(a, here()); }, py::arg("a"),
        "True where a is zero");
  m.def("any", &any_of, py::arg("a"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        "whether any element (along dim) is nonzero: a bool tensor");
  m.def("all", &all_of, py::arg("a"), py::arg("dim") = py::none(), py::arg("keepdim") = false,
        "whether every element (along dim) is nonzero: a bool tensor");
  m.def("gt", TIDE_EITHER(gt), py::arg("a"), py::arg("b"), "a bool tensor: True where a > b");
  m.def("ge", TIDE_EITHER(ge), py::arg("a"), py::arg("b"), "a bool tensor: True where a >= b");
  m.def("lt", TIDE_EITHER(lt), py::arg("a"), py::arg("b"), "a bool tensor: True where a < b");
  m.def("le", TIDE_EITHER(le), py::arg("a"), py::arg("b"), "a bool tensor: True where a <= b");
  m.def(
      "where",
      [](const Tensor& cond, const py::object& a, const py::object& b) {
        const bool ta = py::isinstance<Tensor>(a), tb = py::isinstance<Tensor>(b);
        if (ta) {
          const Tensor& x = a.cast<const Tensor&>();
          return either(x, b, [&](const Tensor& u, const Tensor& v, Loc l) { return where(cond, u, v, l); },
                        [&](const Tensor& u, double s, Loc l) { return where(cond, u, s, l); });
        }
        if (tb) {
          const Tensor& y = b.cast<const Tensor&>();
          return either(y, a, [&](const Tensor& v, const Tensor& u, Loc l) { return where(cond, u, v, l); },
                        [&](const Tensor& v, double s, Loc l) { return where(cond, s, v, l); });
        }
        throw py::type_error("where: a or b must be a tide.Tensor (the other may be a number), got " +
                             std::string(py::str(py::type::of(a).attr("__name__"))) + " and " +
                             std::string(py::str(py::type::of(b).attr("__name__"))));
      },
      py::arg("cond"), py::arg("a"), py::arg("b"),
      "a where cond is not 0 (NaN counts as true), else b, all three broadcast together; a and b of one dtype "
      "(a number takes the other's), cond of any; differentiable in a and b");
  m.def("maximum", TIDE_EITHER(maximum), py::arg("a"), py::arg("b"), "the larger of a and b; NaN wins");
  m.def("minimum", TIDE_EITHER(minimum), py::arg("a"), py::arg("b"), "the smaller of a and b; NaN wins");
  m.def(
      "clamp",
      [](const Tensor& t, std::optional<double> lo, std::optional<double> hi) { return clamp(t, lo, hi, here()); },
      py::arg("a"), py::arg("min") = none, py::arg("max") = none, "a limited to [min, max] (either may be left out)");
  m.def(
      "linspace",
      [](double start, double end, std::int64_t steps, const std::string& dt, const std::string& dev) {
        if (steps < 0) throw ValueError("linspace: steps must be >= 0, got " + std::to_string(steps));
        py::module_ np = py::module_::import("numpy");
        py::object values = np.attr("linspace")(start, end, steps);
        return tensor_of(values, std::optional<std::string>(dt), dev, false);
      },
      py::arg("start"), py::arg("end"), py::arg("steps"), py::arg("dtype") = "f32", py::arg("device") = "cpu:0",
      "steps values from start to end, both included, evenly spaced (numpy's linspace)");
  m.def("cat", [](const std::vector<Tensor>& ts, int dim) { return cat(ts, dim, here()); }, py::arg("tensors"),
        py::arg("dim") = 0, "the tensors joined along dim (a new tensor)");
  m.def("stack", [](const std::vector<Tensor>& ts, int dim) { return stack(ts, dim, here()); }, py::arg("tensors"),
        py::arg("dim") = 0, "the tensors (of one shape) joined along a new axis dim");
  m.def(
      "index_select",
      [](const Tensor& a, int dim, const Tensor& index) { return index_select(a, dim, index, here()); },
      py::arg("a"), py::arg("dim"), py::arg("index"),
      "a's slices at index (an i32 or i64 tensor of 0 or 1 axes, on a's device; values may repeat) along dim, in "
      "index's order (torch.index_select); differentiable in a. An index out of range fails the op: on a CPU the "
      "error names it at the next barrier, on a GPU it is a device fault");
  m.def(
      "index_add",
      [](const Tensor& a, int dim, const Tensor& index, const Tensor& src) {
        return index_add(a, dim, index, src, here());
      },
      py::arg("a"), py::arg("dim"), py::arg("index"), py::arg("src"),
      "a copy of a with src's slices added at index along dim (torch.index_add); repeated indices add up; "
      "differentiable in a and src");
  m.def("softmax", [](const Tensor& a, int dim) { return softmax(a, dim, here()); }, py::arg("a"), py::arg("dim"),
        "exp(a) / sum(exp(a)) along dim, shifted by the max (floating dtypes)");
  m.def("log_softmax", [](const Tensor& a, int dim) { return log_softmax(a, dim, here()); }, py::arg("a"),
        py::arg("dim"), "log(softmax(a)), finite where softmax underflows (floating dtypes)");
  m.def("tensor", &tensor_of, py::arg("data"), py::kw_only(), py::arg("dtype") = none, py::arg("device") = "cpu:0",
        py::arg("requires_grad") = false,
        "a tensor holding a copy of data (lists, numbers, arrays); floats become f32 and integers i64 unless "
        "dtype says");
  m.def(
      "zeros_like",
      [](const Tensor& t, std::optional<std::string> dt, std::optional<std::string> dev, bool rg) {
        const TensorOptions o = like(t, dt, dev);
        check_grad_dtype(rg, o.dtype);
        return zeros(t.shape(), o, here()).set_requires_grad(rg);
      },
      py::arg("t"), py::kw_only(), py::arg("dtype") = none, py::arg("device") = none,
      py::arg("requires_grad") = false);
  m.def(
      "ones_like",
      [](const Tensor& t, std::optional<std::string> dt, std::optional<std::string> dev, bool rg) {
        const TensorOptions o = like(t, dt, dev);
        check_grad_dtype(rg, o.dtype);
        return ones(t.shape(), o, here()).set_requires_grad(rg);
      },
      py::arg("t"), py::kw_only(), py::arg("dtype") = none, py::arg("device") = none,
      py::arg("requires_grad") = false);
  m.def(
      "full_like",
      [](const Tensor& t, double v, std::optional<std::string> dt, std::optional<std::string> dev, bool rg) {
        const TensorOptions o = like(t, dt, dev);
        check_grad_dtype(rg, o.dtype);
        return full(t.shape(), v, o, here()).set_requires_grad(rg);
      },
      py::arg("t"), py::arg("value"), py::kw_only(), py::arg("dtype") = none, py::arg("device") = none,
      py::arg("requires_grad") = false);
}

#undef TIDE_EITHER

}  // namespace tide::python
