// Backward formulas of the elementwise ops and copy_to.
#include <tide/ops/creation.h>
#include <tide/ops/elementwise.h>

#include <cmath>
#include <tide/ops/nn.h>

#include "node.h"
#include "record.h"
#include "shape_grad.h"

namespace tide::autograd {

using Grads = std::vector<Tensor>;

void record_binary(Binary op, Tensor& out, const Tensor& a, const Tensor& b, Loc loc) {
  const Shape sa = a.shape(), sb = b.shape();
  switch (op) {
    case Binary::add:
      return (void)record("add", loc, out, {&a, &b}, [sa, sb](const Tensor& g, const Node& n, Loc l) {
        return Grads{n.needs_grad(0) ? sum_to(g, sa, l) : Tensor(), n.needs_grad(1) ? sum_to(g, sb, l) : Tensor()};
      });
    case Binary::sub:
      return (void)record("sub", loc, out, {&a, &b}, [sa, sb](const Tensor& g, const Node& n, Loc l) {
        return Grads{n.needs_grad(0) ? sum_to(g, sa, l) : Tensor(), n.needs_grad(1) ? neg(sum_to(g, sb, l), l) : Tensor()};
      });
    case Binary::mul: {
      // Each input's gradient needs the other input: save only those needed.
      const SavedTensor xa = needs(b) ? SavedTensor(a) : SavedTensor();
      const SavedTensor xb = needs(a) ? SavedTensor(b) : SavedTensor();
      return (void)record("mul", loc, out, {&a, &b}, [sa, sb, xa, xb](const Tensor& g, const Node& n, Loc l) {
        Grads r(2);
        if (n.needs_grad(0)) r[0] = sum_to(mul(g, xb.get(n), l), sa, l);
        if (n.needs_grad(1)) r[1] = sum_to(mul(g, xa.get(n), l), sb, l);
        return r;
      }, {xa, xb});
    }
    case Binary::div: {
      // d(a/b)/db = -(a/b)/b: the output saves recomputing the quotient.
      const SavedTensor xb(b);
      const SavedTensor xo = needs(b) ? SavedTensor(out) : SavedTensor();
      return (void)record("div", loc, out, {&a, &b}, [sa, sb, xb, xo](const Tensor& g, const Node& n, Loc l) {
        Grads r(2);
        const Tensor bv = xb.get(n);
        if (n.needs_grad(0)) r[0] = sum_to(div(g, bv, l), sa, l);
        if (n.needs_grad(1)) r[1] = neg(sum_to(div(mul(g, xo.get(n), l), bv, l), sb, l), l);
        return r;
      }, {xb, xo});
    }
    case Binary::pow: {
      // d(a^b)/da = b a^(b-1), 0 where b = 0 (a^0 is constant, even at
      // a = 0: the exponent -1 becomes 0 there); d(a^b)/db = a^b log a, 0 at
      // a = 0 (log 0 becomes log 1), as torch's.
      const SavedTensor xa(a), xb(b);
      const SavedTensor xo = needs(b) ? SavedTensor(out) : SavedTensor();
      return (void)record("pow", loc, out, {&a, &b}, [sa, sb, xa, xb, xo](const Tensor& g, const Node& n, Loc l) {
        Grads r(2);
        const Tensor av = xa.get(n), bv = xb.get(n);
        if (n.needs_grad(0)) {
          const Tensor e = add(sub(bv, 1.0, l), to_dtype(eq(bv, 0.0, l), bv.dtype(), l), l);
          r[0] = sum_to(mul(g, mul(bv, pow(av, e, l), l), l), sa, l);
        }
        if (n.needs_grad(1)) r[1] = sum_to(mul(g, mul(xo.get(n), log(add(av, to_dtype(eq(av, 0.0, l), av.dtype(), l), l), l), l), l), sb, l);
        return r;
      }, {xa, xb, xo});
    }
    case Binary::maximum:
    case Binary::minimum: {
      // To the input that won; half to each on a tie (torch's rule).
      const bool larger = op == Binary::maximum;
      const SavedTensor xa(a), xb(b);
      return (void)record(larger ? "maximum" : "minimum", loc, out, {&a, &b},
                          [sa, sb, xa, xb, larger](const Tensor& g, const Node& n, Loc l) {
        const Tensor av = xa.get(n), bv = xb.get(n);
        const DType dt = av.dtype();  // the comparisons' bool masks as 0 and 1 of it
        const Tensor half = mul(to_dtype(eq(av, bv, l), dt, l), 0.5, l);
        const Tensor wins_a = add(to_dtype(larger ? gt(av, bv, l) : lt(av, bv, l), dt, l), half, l);
        Grads r(2);
        if (n.needs_grad(0)) r[0] = sum_to(mul(g, wins_a, l), sa, l);
        if (n.needs_grad(1)) r[1] = sum_to(mul(g, rsub(wins_a, 1.0, l), l), sb, l);
        return r;
      }, {xa, xb});
    }
  }
}

void record_scalar(Scalar op, Tensor& out, const Tensor& a, double s, Loc loc) {
  switch (op) {
    case Scalar::add:
      return (void)record("add", loc, out, {&a}, [](const Tensor& g, const Node&, Loc) { return Grads{g}; });
    case Scalar::sub:
      return (void)record("sub", loc, out, {&a}, [](const Tensor& g, const Node&, Loc) { return Grads{g}; });
    case Scalar::rsub:
      return (void)record("rsub", loc, out, {&a}, [](const Tensor& g, const Node&, Loc l) { return Grads{neg(g, l)}; });
    case Scalar::mul:
      return (void)record("mul", loc, out, {&a}, [s](const Tensor& g, const Node&, Loc l) { return Grads{mul(g, s, l)}; });
    case Scalar::div:
      return (void)record("div", loc, out, {&a}, [s](const Tensor& g, const Node&, Loc l) { return Grads{div(g, s, l)}; });
    case Scalar::rdiv: {
      // d(s/a)/da = -(s/a)/a.
      const SavedTensor xa(a), xo(out);
      return (void)record("rdiv", loc, out, {&a}, [xa, xo](const Tensor& g, const Node& n, Loc l) {
        return Grads{neg(div(mul(g, xo.get(n), l), xa.get(n), l), l)};
      }, {xa, xo});
    }
    case Scalar::pow: {
      // d(a^s)/da = s a^(s-1); a^0 is a constant (0, even at a = 0).
      const SavedTensor xa(a);
      return (void)record("pow", loc, out, {&a}, [xa, s](const Tensor& g, const Node& n, Loc l) {
        const Tensor av = xa.get(n);
        if (s == 0.0) return Grads{zeros(av.shape(), {av.dtype(), av.device()}, l)};
        if (s == 2.0) return Grads{mul(g, mul(av, 2.0, l), l)};
        return Grads{mul(g, mul(pow(av, s - 1.0, l), s, l), l)};
      }, {xa});
    }
    case Scalar::rpow: {
      // d(s^a)/da = s^a log s; 0 for s = 0 (0^a is constant where it is
      // finite), as torch's.
      const SavedTensor xo(out);
      const double log_s = std::log(s);
      return (void)record("rpow", loc, out, {&a}, [xo, log_s, s](const Tensor& g, const Node& n, Loc l) {
        const Tensor y = xo.get(n);
        if (s == 0.0) return Grads{zeros(y.shape(), {y.dtype(), y.device()}, l)};
        return Grads{mul(mul(g, y, l), log_s, l)};
      }, {xo});
    }
    case Scalar::maximum:
    case Scalar::minimum: {
      // Where a is kept, ties included (torch.clamp's rule).
      const bool larger = op == Scalar::maximum;
      const SavedTensor xa(a);
      return (void)record(larger ? "maximum" : "minimum", loc, out, {&a},
                          [xa, s, larger](const Tensor& g, const Node& n, Loc l) {
        const Tensor av = xa.get(n);
        return Grads{mul(g, to_dtype(larger ? ge(av, s, l) : le(av, s, l), g.dtype(), l), l)};
      }, {xa});
    }
  }
}

void record_unary(Unary op, Tensor& out, const Tensor& a, Loc loc) {
  switch (op) {
    case Unary::neg:
      return (void)record("neg", loc, out, {&a}, [](const Tensor& g, const Node&, Loc l) { return Grads{neg(g, l)}; });
    case Unary::exp: {
      const SavedTensor xo(out);
      return (void)record("exp", loc, out, {&a},
                    [xo](const Tensor& g, const Node& n, Loc l) { return Grads{mul(g, xo.get(n), l)}; }, {xo});
    }
    case Unary::log: {
      const SavedTensor xa(a);
      return (void)record("log", loc, out, {&a},
                    [xa](const Tensor& g, const Node& n, Loc l) { return Grads{div(g, xa.get(n), l)}; }, {xa});
    }
    case Unary::relu: {
      const SavedTensor xa(a);
      return (void)record("relu", loc, out, {&a},
                    [xa](const Tensor& g, const Node& n, Loc l) { return Grads{relu_backward(g, xa.get(n), l)}; }, {xa});
    }
    case Unary::sqrt: {
      // d sqrt(a) = 1 / (2 sqrt(a)).
      const SavedTensor xo(out);
      return (void)record("sqrt", loc, out, {&a}, [xo](const Tensor& g, const Node& n, Loc l) {
        return Grads{div(g, mul(xo.get(n), 2.0, l), l)};
      }, {xo});
    }
    case Unary::tanh: {
      // d tanh(a) = 1 - tanh(a)^2.
      const SavedTensor xo(out);
      return (void)record("tanh", loc, out, {&a}, [xo](const Tensor& g, const Node& n, Loc l) {
        const Tensor y = xo.get(n);
        return Grads{mul(g, rsub(mul(y, y, l), 1.0, l), l)};
      }, {xo});
    }
    case Unary::sigmoid: {
      // d sigmoid(a) = sigmoid(a) (1 - sigmoid(a)).
      const SavedTensor xo(out);
      return (void)record("sigmoid", loc, out, {&a}, [xo](const Tensor& g, const Node& n, Loc l) {
        const Tensor y = xo.get(n);
        return Grads{mul(g, mul(y, rsub(y, 1.0, l), l), l)};
      }, {xo});
    }
    case Unary::abs: {
      // d|a| = sign(a), 0 at 0 (as torch).
      const SavedTensor xa(a);
      return (void)record("abs", loc, out, {&a}, [xa](const Tensor& g, const Node& n, Loc l) {
        const Tensor av = xa.get(n);
        const DType dt = av.dtype();
        return Grads{mul(g, sub(to_dtype(gt(av, 0.0, l), dt, l), to_dtype(lt(av, 0.0, l), dt, l), l), l)};
      }, {xa});
    }
  }
}

void record_copy_to(Tensor& out, const Tensor& src, Loc loc) {
  const Device from = src.device();
  record("copy_to", loc, out, {&src},
         [from](const Tensor& g, const Node&, Loc l) { return Grads{copy_to(g, from, l)}; });
}

void record_to_dtype(Tensor& out, const Tensor& a, Loc loc) {
  const DType from = a.dtype();
  record("to_dtype", loc, out, {&a},
         [from](const Tensor& g, const Node&, Loc l) { return Grads{to_dtype(g, from, l)}; });
}

}  // namespace tide::autograd
