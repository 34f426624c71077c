// The trainer's model: an MLP of linear layers with ReLU between them, its
// forward pass (keeping what backward needs), and host buffers as tensors.
#pragma once

#include <cstdint>
#include <vector>

#include <tide/tide.h>

namespace tide::train {

struct Model {
  std::vector<std::int64_t> widths;  // input, hidden..., classes
  std::vector<Tensor> params;        // w0, b0, w1, b1, ...
  int layers() const { return static_cast<int>(widths.size()) - 1; }
  Tensor& w(int l) { return params[static_cast<std::size_t>(2 * l)]; }
  Tensor& b(int l) { return params[static_cast<std::size_t>(2 * l + 1)]; }
};

/// PyTorch's nn.Linear default: weights and biases uniform in +-1/sqrt(in).
Model make_model(const std::vector<std::int64_t>& widths, DType dtype, Device device, std::uint64_t seed);

/// Forward to the logits, keeping what backward needs.
struct Activations {
  std::vector<Tensor> inputs;  // input of layer l
  std::vector<Tensor> pre;     // pre-activation of layer l (before relu)
  Tensor logits;
};

Activations forward(Model& m, const Tensor& x);

/// A host buffer as a tensor of `dtype` (f32 or f64; i32 too from doubles).
Tensor host_tensor(const std::vector<float>& v, const Shape& shape, DType dtype);
Tensor host_tensor(const std::vector<double>& v, const Shape& shape, DType dtype);

}  // namespace tide::train
