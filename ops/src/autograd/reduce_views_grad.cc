// Backward formulas of the reductions, the views and the strided copies.
#include <tide/ops/elementwise.h>
#include <tide/ops/reduction.h>
#include <tide/ops/views.h>

#include "../views_internal.h"
#include "node.h"
#include "record.h"
#include "shape_grad.h"

namespace tide::autograd {

using Grads = std::vector<Tensor>;

void record_reduce(Reduce op, Tensor& out, const Tensor& a, std::optional<int> axis, Loc loc) {
  const Shape sa = a.shape();
  // The gradient of the result, with the reduced axis put back as extent 1
  // so that it broadcasts against a.
  auto unreduce = [axis](const Tensor& g) { return axis ? unsqueeze(g, *axis) : g; };
  switch (op) {
    case Reduce::sum:
      return (void)record("sum", loc, out, {&a}, [sa, unreduce](const Tensor& g, const Node&, Loc l) {
        return Grads{expand(unreduce(g), sa, l)};
      });
    case Reduce::mean: {
      const std::int64_t count = axis ? sa[*axis] : sa.numel();
      return (void)record("mean", loc, out, {&a}, [sa, unreduce, count](const Tensor& g, const Node&, Loc l) {
        return Grads{expand(div(unreduce(g), static_cast<double>(count), l), sa, l)};
      });
    }
    case Reduce::max: {
      // Shared evenly among the elements equal to the maximum (a subgradient;
      // torch.max() over all elements does the same). A NaN maximum equals
      // nothing, so the elements that are NaN where it is take it.
      const SavedTensor xa(a), xo(out);
      return (void)record("max", loc, out, {&a}, [xa, xo, axis, unreduce](const Tensor& g, const Node& n, Loc l) {
        const Tensor av = xa.get(n), top = unreduce(xo.get(n));
        const DType dt = av.dtype();  // the comparisons' bool masks as 0 and 1 of it
        const Tensor nan_here = to_dtype(ne(av, av, l), dt, l), nan_top = to_dtype(ne(top, top, l), dt, l);
        const Tensor hit = add(to_dtype(eq(av, top, l), dt, l), mul(nan_here, nan_top, l), l);
        const Tensor ties = axis ? unsqueeze(sum(hit, *axis, l), *axis) : sum(hit, l);
        return Grads{mul(hit, div(unreduce(g), ties, l), l)};
      }, {xa, xo});
    }
  }
}

void record_view(const char* name, Tensor& out, const Tensor& a) {
  const Shape sa = a.shape();
  record(name, Loc(), out, {&a}, [sa](const Tensor& g, const Node&, Loc) {
    return Grads{reshape(g, std::vector<std::int64_t>(sa.begin(), sa.end()))};
  });
}

void record_strided(Tensor& out, const Tensor& a, const std::vector<std::int64_t>& strides, std::int64_t offset,
                    Loc loc) {
  const Shape sa = a.shape();
  record("strided", loc, out, {&a}, [sa, strides, offset](const Tensor& g, const Node&, Loc l) {
    return Grads{detail::strided_scatter_add(g, sa, strides, offset, l)};
  });
}

void record_cat(Tensor& out, const std::vector<Tensor>& inputs, int axis, Loc loc) {
  std::vector<const Tensor*> ins;
  std::vector<std::int64_t> sizes;
  for (const Tensor& t : inputs) {
    ins.push_back(&t);
    sizes.push_back(t.shape()[axis]);
  }
  record("cat", loc, out, ins, [axis, sizes](const Tensor& g, const Node& n, Loc l) {
    Grads r(sizes.size());
    std::int64_t at = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (n.needs_grad(i)) r[i] = slice(g, axis, at, at + sizes[i], 1, l);
      at += sizes[i];
    }
    return r;
  });
}

}  // namespace tide::autograd
