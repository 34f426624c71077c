// tide.save and tide.load: named tensors to and from safetensors files
// (tide/ops/safetensors.h). Both release the GIL while they wait on the
// engine and the file.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>

#include <tide/tide.h>

#include "bindings.h"
#include "call_site.h"

namespace py = pybind11;

namespace tide::python {

namespace {

/// A str or an os.PathLike (pathlib.Path) as a path.
std::string path_of(const py::object& p) {
  return py::cast<std::string>(py::module_::import("os").attr("fspath")(p));
}

}  // namespace

void bind_safetensors(py::module_& m) {
  m.def(
      "save",
      [](const py::object& path, const std::map<std::string, Tensor>& tensors,
         const std::optional<std::map<std::string, std::string>>& metadata) {
        const std::string p = path_of(path);
        const Loc loc = here();
        py::gil_scoped_release nogil;
        save(p, tensors, metadata.value_or(std::map<std::string, std::string>{}), loc);
      },
      py::arg("path"), py::arg("tensors"), py::arg("metadata") = py::none(),
      "writes a dict of tensors (and a dict of str metadata) to a safetensors file, atomically; "
      "a blocker: waits for the tensors' values");
  m.def(
      "load",
      [](const py::object& path, const std::string& device) {
        const std::string p = path_of(path);
        const Device d = Device::parse(device);
        const Loc loc = here();
        SavedTensors s;
        {
          py::gil_scoped_release nogil;
          s = load(p, d, loc);
        }
        return s.tensors;
      },
      py::arg("path"), py::arg("device") = "cpu:0",
      "the tensors of a safetensors file, as a dict by name (F32, F64, I32, I64, BOOL)");
  m.def(
      "load_metadata", [](const py::object& path) { return load_metadata(path_of(path)); }, py::arg("path"),
      "the str -> str metadata of a safetensors file");
}

}  // namespace tide::python
