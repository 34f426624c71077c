// DLPack, the array-exchange protocol of numpy, PyTorch, JAX and CuPy:
// Tensor.__dlpack__ / __dlpack_device__ hand a tensor's storage to another
// library without a copy, and tide.from_dlpack takes theirs (a copy).
//
// The structs below are DLPack's C ABI (dlpack.h, version 0.8 layout, the
// unversioned "dltensor" capsule every consumer accepts), declared here
// rather than vendored.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "call_site.h"

namespace py = pybind11;

namespace tide::python {

namespace {

struct DLDevice {
  std::int32_t device_type;  // 1: CPU, 2: CUDA
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;  // 0: signed int, 2: float, 6: bool
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // null: compact row-major
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

constexpr std::int32_t kDLCPU = 1, kDLCUDA = 2;
constexpr const char* kCapsule = "dltensor";
constexpr const char* kUsedCapsule = "used_dltensor";

/// What an exported tensor keeps alive: its storage (so the bytes outlive
/// every tide handle) and the shape the DLTensor points to.
struct Export {
  std::shared_ptr<Storage> storage;
  std::vector<std::int64_t> shape;
  DLManagedTensor managed{};
};

/// The consumer is done with the tensor. On a GPU it may still have kernels
/// queued that read it, on streams tide does not order against, so the
/// device finishes its work before tide may reuse the memory.
void delete_export(DLManagedTensor* self) {
  auto* e = static_cast<Export*>(self->manager_ctx);
  if (e->storage->device().is_cuda()) synchronize_cuda_device(e->storage->device().index);
  delete e;
}

/// A capsule no consumer took (renamed) still owns its tensor.
void capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kCapsule) == 0) return;  // consumed: the consumer calls the deleter
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsule));
  if (m != nullptr && m->deleter != nullptr) m->deleter(m);
}

DLDataType dl_dtype(DType t) {
  switch (t) {
    case DType::f32: return {2, 32, 1};
    case DType::f64: return {2, 64, 1};
    case DType::i32: return {0, 32, 1};
    case DType::i64: return {0, 64, 1};
    case DType::b8: return {6, 8, 1};  // kDLBool
  }
  throw DTypeError("__dlpack__: a dtype tide does not know");
}

py::tuple dlpack_device(const Tensor& t) {
  t.check_defined("__dlpack_device__");
  const Device d = t.device();
  return py::make_tuple(d.is_cuda() ? kDLCUDA : kDLCPU, d.is_cuda() ? d.index : 0);
}

/// The tensor's own storage, once the ops writing it have run (a blocker:
/// the consumer may read at once, on any stream). Every CPU device of tide
/// is host memory, so each is DLPack's CPU device 0.
py::capsule dlpack(const Tensor& src, const py::object& stream, const py::object& max_version,
                   const py::object& dl_device, const py::object& copy) {
  // The producers are complete when this returns, so a consumer may read on
  // any stream. max_version: this is the unversioned capsule, which the
  // protocol lets a consumer of any version take.
  (void)stream;
  (void)max_version;
  src.check_defined("__dlpack__");
  if (!dl_device.is_none() && !dl_device.equal(dlpack_device(src)))
    throw py::buffer_error("__dlpack__: tide exports a tensor on its own device only (" +
                           std::string(py::str(dlpack_device(src))) + ")");
  const Loc loc = here();
  // copy=True asks for bytes of the consumer's own: a copy on the same device.
  // A mirror (a column, a step, a transpose: tide::as_strided) is exported as
  // a copy too: its own bytes are refreshed by the engine whenever its source
  // is written, unordered with the consumer's reads, and the consumer's
  // writes would not reach the source.
  const bool mirror = is_mirror(src);
  if (mirror && !copy.is_none() && !copy.cast<bool>())
    throw py::buffer_error("__dlpack__(copy=False): this tensor is a mirror (a column, a step or a transpose of "
                           "another), which has no bytes of that tensor's to share; export a copy (copy=None or True)");
  const Tensor t = mirror || (!copy.is_none() && copy.cast<bool>()) ? copy_to(src, src.device(), loc) : src;
  {
    py::gil_scoped_release nogil;
    t.wait_to_read(loc);  // rethrows a producer's failure
  }
  auto e = std::make_unique<Export>();
  e->storage = t.storage();
  e->shape.assign(t.shape().begin(), t.shape().end());
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = e->storage->data();
  const Device d = t.device();
  dl.device = {d.is_cuda() ? kDLCUDA : kDLCPU, d.is_cuda() ? d.index : 0};
  dl.ndim = t.ndim();
  dl.dtype = dl_dtype(t.dtype());
  dl.shape = e->shape.data();
  dl.strides = nullptr;
  dl.byte_offset = 0;
  e->managed.manager_ctx = e.get();
  e->managed.deleter = &delete_export;
  DLManagedTensor* m = &e->managed;
  py::capsule c(m, kCapsule, &capsule_destructor);
  e.release();  // the capsule (or its consumer) owns it now
  return c;
}

/// A tide tensor holding a copy of `obj`'s values: anything numpy can read
/// through DLPack or the buffer protocol (host memory). Memory on a GPU is
/// not read here: move it to the host first (PyTorch: .cpu()).
Tensor from_dlpack(const py::object& obj, const std::string& device) {
  if (py::hasattr(obj, "__dlpack_device__")) {
    const auto dev = obj.attr("__dlpack_device__")().cast<std::pair<int, int>>();
    if (dev.first != kDLCPU)
      throw DeviceError("tide.from_dlpack: the array is on DLPack device type " + std::to_string(dev.first) +
                        " (2 is CUDA); tide copies from host memory only: move it there first (PyTorch: .cpu())");
  }
  py::module_ np = py::module_::import("numpy");
  // A numpy bool array is read as it is: numpy before 1.25 has no DLPack bool.
  const bool numpy_bools = py::isinstance<py::array>(obj) && numpy_type(obj).kind == 'b';
  py::object array = numpy_bools ? obj : np.attr("from_dlpack")(obj);
  return py::module_::import("tide").attr("from_numpy")(array, device).cast<Tensor>();
}

}  // namespace

void bind_dlpack(py::module_& m) {
  auto tensor = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("Tensor"));
  tensor.def("__dlpack__", &dlpack, py::kw_only(), py::arg("stream") = py::none(),
             py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
             "DLPack: a capsule sharing this tensor's storage, once its producers have run (a blocker)");
  tensor.def("__dlpack_device__", &dlpack_device, "DLPack: (device type, index): (1, 0) on a CPU, (2, i) on cuda:i");
  m.def("from_dlpack", &from_dlpack, py::arg("array"), py::arg("device") = "cpu:0",
        "a tensor holding a copy of a host array from another library (numpy, PyTorch, ...), through DLPack");
}

}  // namespace tide::python
