// matmul: the frontend checks, then the device kind's gemm (kernels.h): on
// CPU devices f32/f64 through CBLAS (row-major gemm, transposes passed
// through) and i32 by a plain loop, both in ops/src/cpu/gemm.h; on CUDA
// devices through ops/src/cuda/blas.h. And the matmul precision setting.
#include <tide/ops/linalg.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "autograd/record.h"
#include "gemm_precision.h"
#include "kernels.h"
#include "op_util.h"

namespace tide {

namespace {

using namespace detail;

/// "[2, 3]" or, transposed, "[2, 3]^T": how an operand appears in messages.
std::string operand(const Tensor& t, bool trans) { return t.shape().str() + (trans ? "^T" : ""); }

/// The setting as an int; kUnset until it is set or read from the
/// environment.
constexpr int kUnset = -1;
std::atomic<int> g_matmul_precision{kUnset};

}  // namespace

const char* matmul_precision_name(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::tf32: return "tf32";
    case MatmulPrecision::bf16: return "bf16";
    case MatmulPrecision::exact: break;
  }
  return "exact";
}

MatmulPrecision parse_matmul_precision(std::string_view text) {
  for (MatmulPrecision p : {MatmulPrecision::exact, MatmulPrecision::tf32, MatmulPrecision::bf16})
    if (text == matmul_precision_name(p)) return p;
  throw ValueError("matmul precision '" + std::string(text) + "': expected 'exact', 'tf32' or 'bf16'");
}

void set_matmul_precision(MatmulPrecision p) { g_matmul_precision.store(static_cast<int>(p)); }

MatmulPrecision matmul_precision() {
  int p = g_matmul_precision.load();
  if (p != kUnset) return static_cast<MatmulPrecision>(p);
  MatmulPrecision from_env = MatmulPrecision::exact;
  if (const char* v = std::getenv("TIDE_MATMUL_PRECISION"); v && *v) {
    try {
      from_env = parse_matmul_precision(v);
    } catch (const ValueError&) {
      throw ValueError(std::string("TIDE_MATMUL_PRECISION=") + v +
                       ": expected 'exact', 'tf32' or 'bf16'");
    }
  }
  // A set_matmul_precision racing this read wins: the environment is only
  // the default.
  g_matmul_precision.compare_exchange_strong(p, static_cast<int>(from_env));
  return static_cast<MatmulPrecision>(g_matmul_precision.load());
}

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, Loc loc) {
  const char* name = "matmul";
  Engine& e = engine_for(name, a, b);
  if (a.ndim() != 2 || b.ndim() != 2)
    throw ShapeError(op_prefix(name) + "needs two 2-D tensors, got shapes " + a.shape().str() +
                     " and " + b.shape().str());
  // op(a) is [m, k], op(b) is [kb, n].
  const std::int64_t m = a.shape()[trans_a ? 1 : 0], k = a.shape()[trans_a ? 0 : 1];
  const std::int64_t kb = b.shape()[trans_b ? 1 : 0], n = b.shape()[trans_b ? 0 : 1];
  if (k != kb)
    throw ShapeError(op_prefix(name) + "inner dimensions differ: " + operand(a, trans_a) + " x " +
                     operand(b, trans_b) + " (op(a)'s columns, " + std::to_string(k) +
                     ", must equal op(b)'s rows, " + std::to_string(kb) + ")");
  check_same_dtype(name, a, b);
  if (a.dtype() == DType::b8) throw DTypeError(op_prefix(name) + "multiplies numbers, not bool tensors");
  const GemmDims d = gemm_dims(name, m, n, k, trans_a, trans_b);
  const auto fn = kernels::kernel_for(name, a.device(), kernels::linalg(a.device()).gemm);
  const DType dt = a.dtype();
  const MatmulPrecision p = gemm_precision(dt);
  Tensor out = push_new(
      e, name, Shape{m, n}, dt, a.device(), {a.storage(), b.storage()},
      [fn, d, dt, p](const OpContext& ctx) {
        fn(ctx.native_stream, dt, p, ctx.in<void>(0), ctx.in<void>(1), ctx.out<void>(0), d);
      },
      loc);
  if (autograd::wants(a, b)) autograd::record_matmul(out, a, b, trans_a, trans_b, loc);
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b, Loc loc) { return matmul(a, b, false, false, loc); }

}  // namespace tide
