// Backward formulas of the matrix products and the loss.
#include <tide/ops/elementwise.h>
#include <tide/ops/linalg.h>
#include <tide/ops/nn.h>

#include "node.h"
#include "record.h"

namespace tide::autograd {

using Grads = std::vector<Tensor>;

// C = op(A) op(B). With op(A) = A:   dA = dC op(B)^T.
//                  With op(A) = A^T: dA = op(B) dC^T (A is stored transposed).
//                  With op(B) = B:   dB = op(A)^T dC.
//                  With op(B) = B^T: dB = dC^T op(A).
// Every product is one gemm with flags: nothing is transposed in memory.
void record_matmul(Tensor& out, const Tensor& a, const Tensor& b, bool ta, bool tb, Loc loc) {
  const SavedTensor xa = needs(b) ? SavedTensor(a) : SavedTensor();
  const SavedTensor xb = needs(a) ? SavedTensor(b) : SavedTensor();
  record("matmul", loc, out, {&a, &b}, [xa, xb, ta, tb](const Tensor& g, const Node& n, Loc l) {
    Grads r(2);
    if (n.needs_grad(0)) {
      const Tensor bv = xb.get(n);
      r[0] = ta ? matmul(bv, g, tb, true, l) : matmul(g, bv, false, !tb, l);
    }
    if (n.needs_grad(1)) {
      const Tensor av = xa.get(n);
      r[1] = tb ? matmul(g, av, true, ta, l) : matmul(av, g, !ta, false, l);
    }
    return r;
  }, {xa, xb});
}

void record_linear(Tensor& out, const Tensor& x, const Tensor& w, const Tensor& b, Loc loc) {
  const SavedTensor xx = needs(w) ? SavedTensor(x) : SavedTensor();
  const SavedTensor xw = needs(x) ? SavedTensor(w) : SavedTensor();
  // The parameters' gradients first, so that their reductions can start
  // before the input's gradient is computed (linear_backward_*'s order).
  record("linear", loc, out, {&x, &w, &b}, [xx, xw](const Tensor& g, const Node& n, Loc l) {
    Grads r(3);
    if (n.needs_grad(1)) r[1] = linear_backward_weight(g, xx.get(n), l);
    if (n.needs_grad(2)) r[2] = linear_backward_bias(g, l);
    if (n.needs_grad(0)) r[0] = linear_backward_input(g, xw.get(n), l);
    return r;
  }, {xx, xw});
}

void record_softmax_cross_entropy(Tensor& loss, const Tensor& probs, const Tensor& logits, const Tensor& labels,
                                  Loc loc) {
  const SavedTensor xp(probs), xl(labels);
  FnNode& node = record("softmax_cross_entropy", loc, loss, {&logits},
         [xp, xl](const Tensor& g, const Node& n, Loc l) {
           // g is 0-d: it scales every row (one broadcast multiply).
           return Grads{mul(softmax_cross_entropy_backward(xp.get(n), xl.get(n), l), g, l)};
         }, {xp, xl});
  // backward(loss): the gradient as it is, with no ones and no multiply.
  node.set_unit_form([xp, xl](const Tensor&, const Node& n, Loc l) {
    return Grads{softmax_cross_entropy_backward(xp.get(n), xl.get(n), l)};
  });
}

}  // namespace tide::autograd
