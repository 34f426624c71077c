// Autograd for Python: Tensor.requires_grad, .grad, .backward() and the
// grad mode behind tide.no_grad() (python/tide/_grad.py).
#include <pybind11/functional.h>
#include <pybind11/stl.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include <tide/tide.h>

#include "bindings.h"
#include "call_site.h"

namespace py = pybind11;

namespace tide::python {

namespace {

void backward_py(const Tensor& t, std::optional<Tensor> gradient, bool retain_graph) {
  backward(t, gradient ? *gradient : Tensor(), BackwardOptions{retain_graph}, here());
}

}  // namespace

void bind_autograd(py::module_& m) {
  auto tensor = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  tensor
      .def_property(
          "requires_grad", &Tensor::requires_grad,
          [](Tensor& t, bool on) { t.set_requires_grad(on); },
          "whether gradients flow to this tensor; set it on a leaf (floating tensors only)")
      .def(
          "requires_grad_", [](py::object self, bool on) { self.cast<Tensor&>().set_requires_grad(on); return self; },
          py::arg("requires_grad") = true, "sets requires_grad on this leaf and returns it")
      .def_property(
          "grad",
          [](const Tensor& t) -> std::optional<Tensor> {
            Tensor g = t.grad();
            if (!g.defined()) return std::nullopt;
            return g;
          },
          [](Tensor& t, std::optional<Tensor> g) { t.set_grad(g ? *g : Tensor()); },
          "the gradient accumulated by backward() (None until one reaches this leaf); "
          "treat it as read-only, or assign None to clear it")
      .def_property_readonly("is_leaf", &Tensor::is_leaf, "True unless a recorded op made this tensor")
      .def_property_readonly(
          "grad_fn",
          [](const Tensor& t) -> std::optional<std::string> {
            const char* name = grad_fn_name(t);
            if (!*name) return std::nullopt;
            return std::string(name);
          },
          "the name of the op that made this tensor ('add', 'linear', ...), or None for a leaf")
      .def("detach", &Tensor::detach, "the same values, outside any graph (shares the storage)")
      .def("backward", &backward_py, py::arg("gradient") = py::none(), py::arg("retain_graph") = false,
           "accumulates the gradient of this tensor into every leaf it depends on (queues the backward "
           "ops and returns; gradient is needed unless this tensor has one element)")
      .def(
          "register_post_accumulate_grad_hook",
          [](const Tensor& t, std::function<void(const Tensor&)> hook) {
            register_post_accumulate_grad_hook(t, std::move(hook));
          },
          py::arg("hook"), "hook(grad) runs each time a backward has summed all its contributions to this leaf");
  m.def("is_grad_enabled", &GradMode::enabled, "whether ops record the autograd graph on this thread");
  m.def("set_grad_enabled", &GradMode::set_enabled, py::arg("mode"),
        "turns recording on or off on this thread (tide.no_grad() does it for a block)");
}

}  // namespace tide::python
