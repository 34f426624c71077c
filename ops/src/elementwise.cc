// Elementwise ops: check on the frontend, then push one call of the kernel
// that the device kind's table holds for the op (kernels.h; the functors are
// in elementwise_functors.h, one per op for every device).
#include <tide/ops/elementwise.h>
#include <tide/core/copy.h>

#include <string>

#include "kernels.h"
#include "op_util.h"

namespace tide {

namespace {

using namespace detail;
using kernels::BinaryOp;
using kernels::UnaryOp;
using kernels::kernel_for;

constexpr int slot(BinaryOp op) { return static_cast<int>(op); }
constexpr int slot(UnaryOp op) { return static_cast<int>(op); }

Tensor binary(const char* name, BinaryOp op, const Tensor& a, const Tensor& b, Loc loc) {
  Engine& e = engine_for(name, a, b);
  check_same_dtype(name, a, b);
  check_same_shape(name, a, b);
  const auto fn = kernel_for(name, a.device(), kernels::elementwise(a.device()).binary[slot(op)]);
  const std::int64_t n = a.numel();
  const DType dt = a.dtype();
  return push_new(
      e, name, a.shape(), dt, a.device(), {a.storage(), b.storage()},
      [fn, dt, n](const OpContext& ctx) {
        fn(dt, ctx.in<void>(0), ctx.in<void>(1), ctx.out<void>(0), n, ctx.native_stream);
      },
      loc);
}

/// An i32 division by a scalar zero is known on the frontend: refuse it
/// there rather than fail on the backend.
void check_scalar_divisor(const char* name, double s, DType t) {
  if (t == DType::i32 && static_cast<std::int32_t>(s) == 0)
    throw ValueError(op_prefix(name) + "integer division by zero (scalar " + std::to_string(s) +
                     " truncates to 0 in i32)");
}

/// The kernel computing a op s, or s op a when `reversed`.
kernels::ScalarFn scalar_kernel(const char* name, BinaryOp op, bool reversed, Device d) {
  const kernels::Elementwise& t = kernels::elementwise(d);
  return kernel_for(name, d, reversed ? t.rscalar[slot(op)] : t.scalar[slot(op)]);
}

/// a op s (or s op a when reversed), the scalar converted to a's dtype.
Tensor with_scalar(const char* name, BinaryOp op, bool reversed, const Tensor& a, double s, Loc loc) {
  Engine& e = engine_for(name, a);
  check_scalar_fits(name, s, a.dtype());
  if (op == BinaryOp::div && !reversed) check_scalar_divisor(name, s, a.dtype());
  const auto fn = scalar_kernel(name, op, reversed, a.device());
  const std::int64_t n = a.numel();
  const DType dt = a.dtype();
  return push_new(
      e, name, a.shape(), dt, a.device(), {a.storage()},
      [fn, dt, n, s](const OpContext& ctx) { fn(dt, ctx.in<void>(0), s, ctx.out<void>(0), n, ctx.native_stream); },
      loc);
}

Tensor unary(const char* name, UnaryOp op, const Tensor& a, bool floating_only, Loc loc) {
  Engine& e = engine_for(name, a);
  if (floating_only) check_floating(name, a.dtype());
  const auto fn = kernel_for(name, a.device(), kernels::elementwise(a.device()).unary[slot(op)]);
  const std::int64_t n = a.numel();
  const DType dt = a.dtype();
  return push_new(
      e, name, a.shape(), dt, a.device(), {a.storage()},
      [fn, dt, n](const OpContext& ctx) { fn(dt, ctx.in<void>(0), ctx.out<void>(0), n, ctx.native_stream); },
      loc);
}

// In place: a's storage is both read and written, so the engine orders the
// op after every earlier reader and writer of a.
void binary_inplace(const char* name, BinaryOp op, Tensor& a, const Tensor& b, Loc loc) {
  Engine& e = engine_for(name, a, b);
  check_same_dtype(name, a, b);
  check_same_shape(name, a, b);
  const auto fn = kernel_for(name, a.device(), kernels::elementwise(a.device()).binary[slot(op)]);
  const std::int64_t n = a.numel();
  const DType dt = a.dtype();
  push_into(
      e, name, a.device(), {a.storage(), b.storage()}, {a.storage()},
      [fn, dt, n](const OpContext& ctx) {
        fn(dt, ctx.in<void>(0), ctx.in<void>(1), ctx.out<void>(0), n, ctx.native_stream);
      },
      loc);
}

void scalar_inplace(const char* name, BinaryOp op, Tensor& a, double s, Loc loc) {
  Engine& e = engine_for(name, a);
  check_scalar_fits(name, s, a.dtype());
  const auto fn = scalar_kernel(name, op, false, a.device());
  const std::int64_t n = a.numel();
  const DType dt = a.dtype();
  push_into(
      e, name, a.device(), {a.storage()}, {a.storage()},
      [fn, dt, n, s](const OpContext& ctx) { fn(dt, ctx.in<void>(0), s, ctx.out<void>(0), n, ctx.native_stream); },
      loc);
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b, Loc loc) { return binary("add", BinaryOp::add, a, b, loc); }
Tensor sub(const Tensor& a, const Tensor& b, Loc loc) { return binary("sub", BinaryOp::sub, a, b, loc); }
Tensor mul(const Tensor& a, const Tensor& b, Loc loc) { return binary("mul", BinaryOp::mul, a, b, loc); }
Tensor div(const Tensor& a, const Tensor& b, Loc loc) { return binary("div", BinaryOp::div, a, b, loc); }
Tensor eq(const Tensor& a, const Tensor& b, Loc loc) { return binary("eq", BinaryOp::eq, a, b, loc); }

Tensor add(const Tensor& a, double s, Loc loc) { return with_scalar("add", BinaryOp::add, false, a, s, loc); }
Tensor sub(const Tensor& a, double s, Loc loc) { return with_scalar("sub", BinaryOp::sub, false, a, s, loc); }
Tensor rsub(const Tensor& a, double s, Loc loc) { return with_scalar("rsub", BinaryOp::sub, true, a, s, loc); }
Tensor mul(const Tensor& a, double s, Loc loc) { return with_scalar("mul", BinaryOp::mul, false, a, s, loc); }
Tensor div(const Tensor& a, double s, Loc loc) { return with_scalar("div", BinaryOp::div, false, a, s, loc); }
Tensor rdiv(const Tensor& a, double s, Loc loc) { return with_scalar("rdiv", BinaryOp::div, true, a, s, loc); }

Tensor neg(const Tensor& a, Loc loc) { return unary("neg", UnaryOp::neg, a, false, loc); }
Tensor exp(const Tensor& a, Loc loc) { return unary("exp", UnaryOp::exp, a, true, loc); }
Tensor log(const Tensor& a, Loc loc) { return unary("log", UnaryOp::log, a, true, loc); }
Tensor relu(const Tensor& a, Loc loc) { return unary("relu", UnaryOp::relu, a, false, loc); }

void add_(Tensor& a, const Tensor& b, Loc loc) { binary_inplace("add_", BinaryOp::add, a, b, loc); }
void sub_(Tensor& a, const Tensor& b, Loc loc) { binary_inplace("sub_", BinaryOp::sub, a, b, loc); }
void mul_(Tensor& a, const Tensor& b, Loc loc) { binary_inplace("mul_", BinaryOp::mul, a, b, loc); }
void add_(Tensor& a, double s, Loc loc) { scalar_inplace("add_", BinaryOp::add, a, s, loc); }
void mul_(Tensor& a, double s, Loc loc) { scalar_inplace("mul_", BinaryOp::mul, a, s, loc); }

void copy_(Tensor& dst, const Tensor& src, Loc loc) {
  const char* name = "copy_";
  Engine& e = engine_of(name, dst, "dst");
  engine_of(name, src, "src");
  check_same_dtype(name, dst, src);
  check_same_shape(name, dst, src);
  const std::size_t nbytes = dst.nbytes();
  const Device to = dst.device(), from = src.device();
  // copy_bytes moves within a device with memmove semantics: copy_(t, t) is
  // legal and its source and destination coincide.
  push_into(
      e, name, copy_device(to, from), {src.storage()}, {dst.storage()},
      [nbytes, to, from](const OpContext& ctx) { copy_bytes(ctx, to, ctx.out<char>(0), from, ctx.in<char>(0), nbytes); },
      loc);
}

Tensor copy_to(const Tensor& src, Device device, Loc loc) {
  const char* name = "copy_to";
  Engine& e = engine_of(name, src, "src");
  e.check_device(device);
  const std::size_t nbytes = src.nbytes();
  const Device from = src.device();
  // On a GPU's copy stream (the source's for GPU to host), so transfers
  // overlap that GPU's compute.
  Tensor out = Tensor::empty(src.shape(), src.dtype(), device);
  OpDesc op;
  op.name = name;
  op.device = copy_device(device, from);
  op.stream = static_cast<int>(StreamKind::copy);
  op.fn = [nbytes, device, from](const OpContext& ctx) {
    copy_bytes(ctx, device, ctx.out<char>(0), from, ctx.in<char>(0), nbytes);
  };
  op.reads.add(src.storage());
  op.writes.add(out.storage());
  op.loc = loc;
  e.push(std::move(op));
  return out;
}

}  // namespace tide
