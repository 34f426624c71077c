// The kernel tables: what an op's frontend (ops/src/*.cc) calls from the
// closure it pushes. Each op family has one struct of function pointers, and
// each device kind one instance of it: the CPU tables are filled in
// ops/src/cpu/, the CUDA tables in ops/src/cuda/ or, in a build without
// CUDA, left empty by ops/src/no_gpu/ (ops/CMakeLists.txt picks which). So a
// frontend is written once: it checks, allocates, takes the kernel for its
// tensors' device kind (kernel_for throws when there is none) and pushes.
//
// Every kernel takes device pointers (host pointers on a CPU device) to
// contiguous row-major elements of `dtype`, and `stream`, the op's native
// stream (a cudaStream_t on CUDA devices, null on CPU). A CPU kernel does the
// work; a CUDA kernel enqueues it on `stream` and returns. Kernels may throw:
// the engine records the error as the op's failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <tide/core/device.h>
#include <tide/core/dtype.h>
#include <tide/core/error.h>
#include <tide/ops/matmul_precision.h>

#include "gemm_dims.h"
#include "host_device.h"

namespace tide::kernels {

// ---------------------------------------------------------------------------
// Elementwise. The op lists name each op and its functor
// (elementwise_functors.h); elementwise_table.h builds each device kind's
// table from them.

#define TIDE_BINARY_OPS(X)                                                                           \
  X(add, Add) X(sub, Sub) X(mul, Mul) X(div, Div) X(pow, Pow) X(eq, Eq) X(ne, Ne) X(gt, Gt) X(ge, Ge) \
  X(lt, Lt) X(le, Le) X(maximum, Maximum) X(minimum, Minimum) X(logical_and, LogicalAnd)           \
  X(logical_or, LogicalOr) X(logical_xor, LogicalXor)
#define TIDE_UNARY_OPS(X)                                                                                  \
  X(neg, Neg) X(exp, Exp) X(log, Log) X(relu, Relu) X(sqrt, Sqrt) X(tanh, Tanh) X(sigmoid, Sigmoid) \
  X(abs, Abs)

#define TIDE_OP_ENUMERATOR(name, functor) name,
enum class BinaryOp { TIDE_BINARY_OPS(TIDE_OP_ENUMERATOR) count };
enum class UnaryOp { TIDE_UNARY_OPS(TIDE_OP_ENUMERATOR) count };
#undef TIDE_OP_ENUMERATOR

constexpr int kBinaryOps = static_cast<int>(BinaryOp::count);
constexpr int kUnaryOps = static_cast<int>(UnaryOp::count);

/// out[i] = a[i] op b[i]; `out` may alias `a` or `b` (in-place ops).
using BinaryFn = void (*)(DType dtype, const void* a, const void* b, void* out, std::int64_t n,
                          void* stream);
/// out[i] = a[i] op s (or s op a[i]), s converted to `dtype` first
/// (static_cast: i32 truncates toward zero); `out` may alias `a`.
using ScalarFn = void (*)(DType dtype, const void* a, double s, void* out, std::int64_t n,
                          void* stream);
/// out[i] = op(a[i]); `out` may alias `a`.
using UnaryFn = void (*)(DType dtype, const void* a, void* out, std::int64_t n, void* stream);

/// How a broadcast binary op walks its operands (broadcast_map.h makes it):
/// the output's extents, row-major, and for each input the axes along which
/// it walks (bit d of a_walks / b_walks); along the others it is broadcast.
/// Axes of extent 1 are dropped and neighbours merged where each input walks
/// both or neither, so ndim is small (a bias row over a matrix is 2 axes),
/// the last axis is the inner loop, and an input's stride along an axis it
/// walks is the product of the later extents it walks (strides()). Compact,
/// since an op's closure carries it. ndim >= 1.
struct BroadcastMap {
  static constexpr int kMaxDims = 6;  // Shape::kMaxDims
  std::int64_t extent[kMaxDims] = {};
  std::uint8_t ndim = 0;
  std::uint8_t a_walks = 0;
  std::uint8_t b_walks = 0;

  TIDE_HOST_DEVICE std::int64_t numel() const {
    std::int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= extent[i];
    return n;
  }
  /// An input's stride in elements along each axis: 0 where it is broadcast.
  TIDE_HOST_DEVICE void strides(std::uint8_t walks, std::int64_t* stride) const {
    std::int64_t step = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      const bool walks_d = (walks >> d) & 1u;
      stride[d] = walks_d ? step : 0;
      if (walks_d) step *= extent[d];
    }
  }
};

/// out (contiguous, map.numel() elements) = a op b along `map`; `out` may
/// alias `a` when a is not broadcast (in-place ops).
using BroadcastFn = void (*)(DType dtype, const void* a, const void* b, void* out, const BroadcastMap& map,
                             void* stream);

/// A strided window on a contiguous input: output element i (row-major over
/// `extent`) is input element offset + sum_d index_d * stride[d]. Strides
/// may be 0 or negative (a reversed slice); every element reached is inside
/// the input (views.cc checks). Axes are merged where they run on, so the
/// last axis is the inner loop. ndim >= 1.
struct StridedMap {
  static constexpr int kMaxDims = 6;  // Shape::kMaxDims
  std::int64_t extent[kMaxDims] = {};
  std::int64_t stride[kMaxDims] = {};
  std::int64_t offset = 0;
  int ndim = 0;
  TIDE_HOST_DEVICE std::int64_t numel() const {
    std::int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= extent[i];
    return n;
  }
};

/// out (contiguous, map.numel() elements) = the input's elements along `map`.
/// `out` never aliases `in`.
using StridedCopyFn = void (*)(DType dtype, const void* in, void* out, const StridedMap& map, void* stream);

/// out[i] = in[i] converted from dtype `from` to `to` (functors::ConvertTo).
using CastFn = void (*)(DType from, DType to, const void* in, void* out, std::int64_t n, void* stream);

/// out[i] = cond[i] != 0 ? a[i] : b[i] (functors::Where) over n elements:
/// a, b and out of `dtype`, cond of `cond_dtype`. `out` may alias none of them.
using WhereFn = void (*)(DType dtype, DType cond_dtype, const void* cond, const void* a, const void* b, void* out,
                         std::int64_t n, void* stream);

/// Along one axis of tensors viewed as [outer, len, inner], with an index of
/// `count` integers of `index_dtype` (i32 or i64):
///   index_select: out[o, i, j] = in[o, index[i], j]  (out is [outer, count, inner])
///   index_add:    out[o, index[i], j] += in[o, i, j]  (in is [outer, count, inner],
///                 out [outer, len, inner]; an index may repeat)
/// An index outside [0, len) fails the op: a ValueError on the CPU, a
/// device-side trap on CUDA (the device is then unusable, as after any
/// fault). `out` never aliases `in` or `index`.
using IndexFn = void (*)(DType dtype, DType index_dtype, const void* in, const void* index, void* out,
                         std::int64_t outer, std::int64_t len, std::int64_t count, std::int64_t inner,
                         void* stream);

struct Elementwise {
  BinaryFn binary[kBinaryOps] = {};
  BroadcastFn broadcast[kBinaryOps] = {};
  StridedCopyFn strided_copy = nullptr;
  /// The reverse: out's element along `map` += in's element i (several i
  /// may reach one element of out, where a stride is 0). `out` never aliases `in`.
  StridedCopyFn strided_scatter_add = nullptr;
  /// out's element along `map` = in's element i, for a map that reaches
  /// each element of out at most once (an assignment through a strided
  /// key; bool too). `out` never aliases `in`.
  StridedCopyFn strided_scatter = nullptr;
  CastFn cast = nullptr;
  WhereFn where = nullptr;
  IndexFn index_select = nullptr;
  IndexFn index_add = nullptr;
  ScalarFn scalar[kBinaryOps] = {};    // a op s
  ScalarFn rscalar[kBinaryOps] = {};   // s op a
  UnaryFn unary[kUnaryOps] = {};
};

// ---------------------------------------------------------------------------
// Creation.

enum class RandomKind { uniform, normal };

struct Creation {
  /// out[i] = value converted to dtype.
  void (*fill)(DType dtype, void* out, std::int64_t n, double value, void* stream) = nullptr;
  /// out[i] = start + i * step, computed in double and converted once.
  void (*arange)(DType dtype, void* out, std::int64_t n, double start, double step,
                 void* stream) = nullptr;
  /// Element i is the value of Philox counter position offset + i (see
  /// creation.cc); floating dtypes only.
  void (*random)(RandomKind kind, DType dtype, void* out, std::int64_t n, std::uint64_t seed,
                 std::uint64_t offset, void* stream) = nullptr;
  /// Copies `nbytes` of host memory to `dst` on the device.
  void (*from_host)(void* dst, const void* src, std::size_t nbytes, void* stream) = nullptr;
};

// ---------------------------------------------------------------------------
// Reductions over a tensor viewed as [outer, len, inner] into [outer, inner].

enum class ReduceOp { sum, mean, max, min };

struct Reduction {
  void (*reduce)(ReduceOp op, DType dtype, const void* in, void* out, std::int64_t outer,
                 std::int64_t len, std::int64_t inner, void* stream) = nullptr;
};

// ---------------------------------------------------------------------------
// Matrix products: c[m, n] = op(a) op(b). `precision` matters for f32 on
// CUDA only.

struct Linalg {
  void (*gemm)(void* stream, DType dtype, MatmulPrecision precision, const void* a, const void* b,
               void* c, const detail::GemmDims& d) = nullptr;
};

// ---------------------------------------------------------------------------
// The nn layers (see nn.h for what each computes).

struct Nn {
  /// y = x w^T + b, d the gemm's dims (trans_b set).
  void (*linear)(void* stream, DType dtype, MatmulPrecision precision, const void* x,
                 const void* w, const void* b, void* y, const detail::GemmDims& d) = nullptr;
  /// out[j] = the sum over r of in[r, j].
  void (*column_sums)(void* stream, DType dtype, const void* in, void* out, std::int64_t rows,
                      std::int64_t cols) = nullptr;
  void (*relu_backward)(void* stream, DType dtype, const void* dy, const void* x, void* dx,
                        std::int64_t n) = nullptr;
  void (*softmax_cross_entropy)(void* stream, DType dtype, const void* logits,
                                const std::int32_t* labels, void* loss, void* probs,
                                std::int64_t rows, std::int64_t classes) = nullptr;
  void (*softmax_cross_entropy_backward)(void* stream, DType dtype, const void* probs,
                                         const std::int32_t* labels, void* dlogits,
                                         std::int64_t rows, std::int64_t classes) = nullptr;
  /// out holds indices of `index` dtype (i32 or i64).
  void (*argmax)(void* stream, DType dtype, const void* in, DType index, void* out, std::int64_t outer,
                 std::int64_t len, std::int64_t inner) = nullptr;
};

// ---------------------------------------------------------------------------
// Optimizers, in place.

/// Adam's per-step scalars, computed on the frontend (see optim.cc).
struct AdamScalars {
  double beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  double step_size = 0;              // lr / (1 - beta1^step)
  double bias_correction2_sqrt = 0;  // sqrt(1 - beta2^step)
};

/// The parameters of one multi-tensor step (one op): parameter k is
/// param[k], of n[k] elements, with grad[k] and its state (state1[k]: SGD's
/// velocity, Adam's m; state2[k]: Adam's v, null for SGD), all of one dtype.
struct OptimTensors {
  static constexpr int kMax = 16;
  int count = 0;
  void* param[kMax]{};
  const void* grad[kMax]{};
  void* state1[kMax]{};
  void* state2[kMax]{};
  std::int64_t n[kMax]{};
};

struct Optim {
  void (*sgd)(void* stream, DType dtype, void* param, const void* grad, void* velocity,
              std::int64_t n, double lr, double momentum, double weight_decay) = nullptr;
  void (*adam)(void* stream, DType dtype, void* param, const void* grad, void* m, void* v,
               std::int64_t n, const AdamScalars& s) = nullptr;
  /// sgd and adam over every parameter of `t` at once (one launch on a
  /// GPU); each parameter's result is the single-tensor kernel's, bit for bit.
  void (*sgd_many)(void* stream, DType dtype, const OptimTensors& t, double lr, double momentum,
                   double weight_decay) = nullptr;
  void (*adam_many)(void* stream, DType dtype, const OptimTensors& t, const AdamScalars& s) = nullptr;
};

// ---------------------------------------------------------------------------
// The tables: one row per device kind, each family's table in it. A backend
// folder defines its row (cpu/tables.cc; cuda/tables.cc, or no_gpu/tables.cc
// whose entries are all null); a new device kind is a DeviceKind, a row
// here and a folder that fills it.

struct KernelRow {
  const Elementwise* elementwise;
  const Creation* creation;
  const Reduction* reduction;
  const Linalg* linalg;
  const Nn* nn;
  const Optim* optim;
};
extern const KernelRow cpu_row, cuda_row;
// The CPU's and CUDA's tables, which their rows hold (the CUDA ones are
// defined only in a build with the backend).
extern const Elementwise cpu_elementwise, cuda_elementwise;
extern const Creation cpu_creation, cuda_creation;
extern const Reduction cpu_reduction, cuda_reduction;
extern const Linalg cpu_linalg, cuda_linalg;
extern const Nn cpu_nn, cuda_nn;
extern const Optim cpu_optim, cuda_optim;

/// The row of `d`'s kind (indexed by DeviceKind).
inline const KernelRow& row(Device d) {
  static constexpr const KernelRow* kRows[] = {&cpu_row, &cuda_row};
  static_assert(static_cast<int>(DeviceKind::cpu) == 0 && static_cast<int>(DeviceKind::cuda) == 1);
  return *kRows[static_cast<std::size_t>(d.kind)];
}

inline const Elementwise& elementwise(Device d) { return *row(d).elementwise; }
inline const Creation& creation(Device d) { return *row(d).creation; }
inline const Reduction& reduction(Device d) { return *row(d).reduction; }
inline const Linalg& linalg(Device d) { return *row(d).linalg; }
inline const Nn& nn(Device d) { return *row(d).nn; }
inline const Optim& optim(Device d) { return *row(d).optim; }

/// Thrown by kernel_for; out of line and cold, so the check it guards
/// costs a compare on the push path.
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_no_kernel(const char* op, Device device) {
  throw DeviceError(std::string(op) + ": no kernel for " + device.str() +
                    ": tide was built without the CUDA backend");
}

/// `fn`, a table's entry for `device`, or a DeviceError naming `op` when the
/// table has none (a CUDA device in a build without the CUDA backend).
template <typename Fn>
Fn kernel_for(const char* op, Device device, Fn fn) {
  if (!fn) [[unlikely]] throw_no_kernel(op, device);
  return fn;
}

}  // namespace tide::kernels
