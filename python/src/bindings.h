// What the parts of the Python module share (python/src/).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include <tide/tide.h>

namespace tide::python {

/// The runtime tide.init() made, or null.
Runtime* current_runtime();

/// A dtype from its name: "f32" or "float32", ... (tide.DTypeError otherwise).
DType parse_dtype(const std::string& s);
/// Refuses requires_grad for an integer dtype before anything is made (the
/// same DTypeError set_requires_grad gives afterwards).
void check_grad_dtype(bool requires_grad, DType dtype);

/// A numpy dtype's kind ('f', 'i', 'u', 'b', ...) and size in bytes, read
/// through Python attributes. pybind11 before 2.12 (Debian 12 has 2.10)
/// reads them from numpy 1's C struct, whose layout numpy 2 changed: there
/// its itemsize() is wrong, so tide never calls it.
struct NumpyType {
  char kind = 0;
  int itemsize = 0;
};
NumpyType numpy_type(const pybind11::handle& array_or_dtype);

/// A numpy copy of t's values (a blocker: waits for them).
pybind11::array to_numpy(const Tensor& t);

/// A copy of numpy array `a` on `device` (made now: later changes to `a`
/// are not seen): float32, float64, int32, int64 and bool, either byte order.
Tensor from_numpy(const pybind11::array& a, const std::string& device);

/// Tensors, creation, elementwise, reduction, linear algebra and nn ops.
void bind_tensors(pybind11::module_& m);
/// torch's Tensor methods for reductions and math, the math functions,
/// tide.tensor and the *_like creators (after bind_tensors).
void bind_tensor_math(pybind11::module_& m);
/// The world communicator's collectives.
void bind_comm(pybind11::module_& m);
/// Tensor.__dlpack__, __dlpack_device__ and tide.from_dlpack (after
/// bind_tensors).
void bind_dlpack(pybind11::module_& m);
/// Tensor.requires_grad, .grad, .backward() and the grad mode (after
/// bind_tensors).
void bind_autograd(pybind11::module_& m);
/// tide.save, tide.load and tide.load_metadata (safetensors files).
void bind_safetensors(pybind11::module_& m);

}  // namespace tide::python
