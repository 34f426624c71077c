#include "model.h"

#include <cmath>

#include <tide/ops/elementwise.h>
#include <tide/ops/nn.h>

namespace tide::train {

Tensor host_tensor(const std::vector<float>& v, const Shape& shape, DType dtype) {
  if (dtype == DType::f32) return from_vector(v, shape);
  return from_vector(std::vector<double>(v.begin(), v.end()), shape);
}

Tensor host_tensor(const std::vector<double>& v, const Shape& shape, DType dtype) {
  if (dtype == DType::f64) return from_vector(v, shape);
  if (dtype == DType::i32) return from_vector(std::vector<std::int32_t>(v.begin(), v.end()), shape);
  return from_vector(std::vector<float>(v.begin(), v.end()), shape);
}

Model make_model(const std::vector<std::int64_t>& widths, DType dtype, Device device, std::uint64_t seed) {
  Model m;
  m.widths = widths;
  for (int l = 0; l + 1 < static_cast<int>(widths.size()); ++l) {
    const std::int64_t in = widths[static_cast<std::size_t>(l)], out = widths[static_cast<std::size_t>(l) + 1];
    const double k = 1.0 / std::sqrt(static_cast<double>(in));
    auto uniform = [&](const Shape& s, std::uint64_t stream) {
      return mul(sub(mul(rand(s, {dtype, device}, {seed * 1000 + stream}), 2.0), 1.0), k);
    };
    m.params.push_back(uniform(Shape{out, in}, 2 * static_cast<std::uint64_t>(l)));
    m.params.push_back(uniform(Shape{out}, 2 * static_cast<std::uint64_t>(l) + 1));
  }
  return m;
}

Activations forward(Model& m, const Tensor& x) {
  Activations a;
  Tensor h = x;
  for (int l = 0; l < m.layers(); ++l) {
    a.inputs.push_back(h);
    Tensor z = linear(h, m.w(l), m.b(l));
    a.pre.push_back(z);
    h = l + 1 < m.layers() ? relu(z) : z;
  }
  a.logits = h;
  return a;
}

}  // namespace tide::train
