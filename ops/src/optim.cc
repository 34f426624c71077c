// Optimizer steps: the frontend checks (nn_checks.h) and one in-place push
// per step, calling the device kind's optimizer table (kernels.h; the CPU
// loops in cpu/optim.cc, the CUDA kernels in cuda/nn.cu). The updated
// tensors are listed as reads as well as writes: a failed producer's poison
// then propagates into them instead of being cleared by this op's
// successful write.
#include <tide/ops/optim.h>

#include <cmath>
#include <string>

#include "kernels.h"
#include "nn_checks.h"
#include "op_util.h"

namespace tide {

using namespace detail;

void sgd_step_(Tensor& param, const Tensor& grad, Tensor& velocity, const SgdOptions& options,
               Loc loc) {
  const char* name = "sgd_step_";
  const Arg ap{param, "param"}, ag{grad, "grad"}, av{velocity, "velocity"};
  Engine& e = engine_for_args(name, {ap, ag, av});
  check_optimizer_tensors(name, ap, ag, {av});
  check_option(name, "lr", options.lr, Range::non_negative);
  check_option(name, "momentum", options.momentum, Range::non_negative);
  check_option(name, "weight_decay", options.weight_decay, Range::non_negative);
  const std::int64_t n = param.numel();
  const SgdOptions o = options;
  const auto fn = kernels::kernel_for(name, param.device(), kernels::optim(param.device()).sgd);
  const DType dt = param.dtype();
  push_into(
      e, name, param.device(), {param.storage(), grad.storage(), velocity.storage()},
      {param.storage(), velocity.storage()},
      [fn, dt, n, o](const OpContext& ctx) {
        fn(ctx.native_stream, dt, ctx.out<void>(0), ctx.in<void>(1), ctx.out<void>(1), n, o.lr, o.momentum,
           o.weight_decay);
      },
      loc);
}

void adam_step_(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, std::int64_t step,
                const AdamOptions& options, Loc loc) {
  const char* name = "adam_step_";
  const Arg ap{param, "param"}, ag{grad, "grad"}, am{m, "m"}, av{v, "v"};
  Engine& e = engine_for_args(name, {ap, ag, am, av});
  check_optimizer_tensors(name, ap, ag, {am, av});
  check_option(name, "lr", options.lr, Range::non_negative);
  check_option(name, "beta1", options.beta1, Range::unit_interval);
  check_option(name, "beta2", options.beta2, Range::unit_interval);
  check_option(name, "eps", options.eps, Range::positive);
  check_option(name, "weight_decay", options.weight_decay, Range::non_negative);
  if (step < 1)
    throw ValueError(op_prefix(name) + "step counts from 1, got " + std::to_string(step));
  const std::int64_t n = param.numel();
  // beta < 1 and step >= 1, so both corrections are > 0.
  const double steps = static_cast<double>(step);
  const kernels::AdamScalars sc{options.beta1, options.beta2, options.eps, options.weight_decay,
                                options.lr / (1.0 - std::pow(options.beta1, steps)),
                                std::sqrt(1.0 - std::pow(options.beta2, steps))};
  const auto fn = kernels::kernel_for(name, param.device(), kernels::optim(param.device()).adam);
  const DType dt = param.dtype();
  push_into(
      e, name, param.device(), {param.storage(), grad.storage(), m.storage(), v.storage()},
      {param.storage(), m.storage(), v.storage()},
      [fn, dt, n, sc](const OpContext& ctx) {
        fn(ctx.native_stream, dt, ctx.out<void>(0), ctx.in<void>(1), ctx.out<void>(1), ctx.out<void>(2), n, sc);
      },
      loc);
}

}  // namespace tide
