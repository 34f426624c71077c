// softmax and log_softmax as compositions of the elementwise and reduction
// ops (so they run on every device and have gradients without kernels of
// their own).
#include <tide/ops/elementwise.h>
#include <tide/ops/nn.h>
#include <tide/ops/reduction.h>
#include <tide/ops/views.h>

#include "op_util.h"

namespace tide {

namespace {

struct Shifted {
  Tensor z;      // a - max(a) along the axis
  Tensor total;  // sum(exp(z)) along it, the axis kept with extent 1
  Tensor e;      // exp(z)
};

Shifted shifted(const char* name, const Tensor& a, int axis, Loc loc) {
  detail::engine_of(name, a, "a");
  detail::check_floating(name, a.dtype());
  const int ax = detail::normalize_axis(name, a, axis);
  // The max only shifts the values (softmax does not change): outside the
  // graph, it costs the backward nothing.
  const Tensor m = unsqueeze(max(a.detach(), ax, loc), ax);
  Shifted s;
  s.z = sub(a, m, loc);
  s.e = exp(s.z, loc);
  s.total = unsqueeze(sum(s.e, ax, loc), ax);
  return s;
}

}  // namespace

Tensor softmax(const Tensor& a, int axis, Loc loc) {
  const Shifted s = shifted("softmax", a, axis, loc);
  return div(s.e, s.total, loc);
}

Tensor log_softmax(const Tensor& a, int axis, Loc loc) {
  const Shifted s = shifted("log_softmax", a, axis, loc);
  return sub(s.z, log(s.total, loc), loc);
}

}  // namespace tide
