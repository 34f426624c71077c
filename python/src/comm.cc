// The world communicator's collectives and the gradient reducer, for
// Python: all are pushed as comm-stream ops (no wait), except barrier.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <vector>

#include <tide/comm/reducer.h>
#include <tide/tide.h>

#include "bindings.h"
#include "call_site.h"

namespace py = pybind11;

namespace tide::python {

namespace {

/// `with reducer.no_sync():` (GradientReducer::NoSync for the block); the
/// reducer is kept alive by the Python object held here.
class PyNoSync {
 public:
  explicit PyNoSync(py::object reducer) : reducer_(std::move(reducer)) {}
  void enter() {
    if (guard_) throw UsageError("GradientReducer.no_sync(): this guard is already entered");
    guard_ = std::make_unique<GradientReducer::NoSync>(reducer_.cast<GradientReducer&>());
  }
  void exit() { guard_.reset(); }

 private:
  py::object reducer_;
  std::unique_ptr<GradientReducer::NoSync> guard_;
};

}  // namespace

void bind_comm(py::module_& m) {
  py::enum_<ReduceOp>(m, "ReduceOp")
      .value("sum", ReduceOp::sum)
      .value("avg", ReduceOp::avg)
      .value("max", ReduceOp::max)
      .value("min", ReduceOp::min);
  auto world = []() -> Communicator& {
    Runtime* rt = current_runtime();
    if (!rt) throw UsageError("tide: no runtime: call tide.init() first");
    return rt->world();
  };
  m.def(
      "all_reduce", [world](const Tensor& t, ReduceOp op) { return world().all_reduce(t, op, here()); }, py::arg("tensor"),
      py::arg("op") = ReduceOp::sum, "the reduction over every rank (async: a comm-stream op)");
  m.def(
      "broadcast_", [world](Tensor& t, int root) { world().broadcast_(t, root, here()); }, py::arg("tensor"),
      py::arg("root") = 0);
  m.def("all_gather", [world](const Tensor& t) { return world().all_gather(t, here()); }, py::arg("tensor"));
  m.def("check_sync", [world] { world().check_sync(here()); },
        "pushes a check that every rank pushed the same collectives so far");
  py::class_<PyNoSync>(m, "NoSync", "with reducer.no_sync(): micro-batches whose gradients are summed, not reduced")
      .def("__enter__", [](PyNoSync& g) { g.enter(); })
      .def("__exit__", [](PyNoSync& g, const py::args&) { g.exit(); });
  py::class_<GradientReducer>(m, "GradientReducer")
      .def(py::init([world](const std::vector<Tensor>& params, double bucket_mb, ReduceOp op, double first_bucket_mb) {
             return new GradientReducer(world(), params, ReducerOptions{bucket_mb, op, first_bucket_mb}, here());
           }),
           py::arg("params"), py::arg("bucket_mb") = 25.0, py::arg("op") = ReduceOp::avg,
           py::arg("first_bucket_mb") = 1.0,
           "buckets of gradients reduced across ranks while backward still computes (the first, of the last "
           "parameters, under first_bucket_mb; 0: every bucket under bucket_mb)")
      .def(
          "no_sync", [](py::object self) { return PyNoSync(self); },
          "a context manager, as DDP's: its micro-batches sum their gradients on this rank and push no "
          "collective; the next micro-batch outside it reduces the sums")
      .def_property_readonly("syncing", &GradientReducer::syncing)
      .def_property_readonly("accumulated", &GradientReducer::accumulated)
      .def("push_gradient", [](GradientReducer& r, int i, const Tensor& g) { r.push_gradient(i, g, here()); },
           py::arg("index"), py::arg("grad"))
      .def("reduced", &GradientReducer::reduced, py::arg("index"), py::return_value_policy::copy)
      .def("finish_step", &GradientReducer::finish_step)
      .def_property_readonly("buckets",
                             [](const GradientReducer& r) {
                               std::vector<std::vector<int>> out;
                               for (const auto& b : r.buckets()) out.push_back(b.params);
                               return out;
                             })
      .def("__repr__", &GradientReducer::describe);
  m.def("broadcast_params_", [world](std::vector<Tensor> ts, int root) {
    const Loc loc = here();
    for (Tensor& t : ts) world().broadcast_(t, root, loc);
  }, py::arg("tensors"), py::arg("root") = 0, "each tensor broadcast in place from root");
  m.def("barrier", [world] {
    Communicator& w = world();
    const Loc loc = here();
    py::gil_scoped_release nogil;
    w.barrier(loc);
  });
}

}  // namespace tide::python
