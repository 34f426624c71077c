// Bad input, at random, to every public op and to the host collectives of a
// one-rank world: no call may crash, every refusal must be a tide::Error,
// and a refused call pushes nothing (nor advances the RNG offset).
//
// TIDE_FUZZ_CASES (default 100000) and TIDE_FUZZ_SEED (default 1) choose
// the run; TIDE_FUZZ_TRACE=1 prints each case before it runs, so the last
// line before a crash names it.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <tide/tide.h>

#include "fuzz_inputs.h"

namespace tide::fuzz {
namespace {

std::uint64_t env_u64(const char* name, std::uint64_t def) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 10);
  if (*end != '\0') {
    ADD_FAILURE() << name << "=" << v << " is not a number";
    return def;
  }
  return x;
}

/// Tensors the ops take: every shape kind, dtype and existing device, plus
/// an undefined tensor and one of a destroyed engine. Remade now and then,
/// so failed ops' poison does not spread over the whole run.
class Pool {
 public:
  explicit Pool(Tensor stale) : stale_(std::move(stale)) {}

  void refill(Inputs& in) {
    tensors_.clear();
    const std::vector<Shape> shapes{{}, {0}, {1}, {3}, {6}, {2, 3}, {3, 2}, {3, 3}, {4, 0}, {0, 3}, {2, 3, 4},
                                    {1, 1, 1, 1, 1, 1}};
    for (const Shape& s : shapes)
      for (DType t : {DType::f32, DType::f64, DType::i32, DType::i64})
        for (int d = 0; d < 2; ++d) tensors_.push_back(make(in, s, t, cpu(d)));
    tensors_.emplace_back();  // undefined
    tensors_.push_back(stale_);
  }

  /// A reference into the pool: in-place ops write it, and two picks may
  /// be the same tensor.
  Tensor& pick(Inputs& in) {
    const int i = in.below(static_cast<int>(tensors_.size()));
    Tensor& t = tensors_[static_cast<std::size_t>(i)];
    in.desc += "t#" + std::to_string(i);
    if (t.defined() && !t.is_same(stale_))
      in.desc += t.shape().str() + dtype_name(t.dtype()) + "@" + std::to_string(t.device().index);
    in.desc += " ";
    return t;
  }

 private:
  static Tensor make(Inputs& in, const Shape& s, DType t, Device d) {
    const auto n = static_cast<std::size_t>(s.numel());
    if (t == DType::i32 || t == DType::i64) {
      std::vector<std::int32_t> v(n);
      for (auto& x : v) x = in.below(8) - 2;  // labels in and out of range
      if (t == DType::i64) return from_vector(std::vector<std::int64_t>(v.begin(), v.end()), s, d);
      return from_vector(v, s, d);
    }
    std::vector<double> v(n);
    for (auto& x : v) x = in.below(9) - 4;
    if (t == DType::f64) return from_vector(v, s, d);
    return from_vector(std::vector<float>(v.begin(), v.end()), s, d);
  }

  Tensor stale_;
  std::vector<Tensor> tensors_;
};

struct Case {
  Inputs& in;
  Pool& pool;
  Runtime& rt;
};

using OpFn = std::function<void(Case&)>;
struct Op {
  const char* name;
  OpFn fn;
};

TensorOptions options(Inputs& in) { return {in.dtype(), in.device()}; }

SgdOptions sgd(Inputs& in) { return {in.scalar(), in.scalar(), in.scalar()}; }
AdamOptions adam(Inputs& in) { return {in.scalar(), in.scalar(), in.scalar(), in.scalar(), in.scalar()}; }

std::vector<Op> ops() {
  std::vector<Op> v;
  auto op = [&](const char* name, OpFn fn) { v.push_back({name, std::move(fn)}); };
  // Creation.
  op("Tensor::empty", [](Case& c) { Tensor::empty(c.in.shape(), c.in.dtype(), c.in.device()); });
  op("zeros", [](Case& c) { zeros(c.in.shape(), options(c.in)); });
  op("ones", [](Case& c) { ones(c.in.shape(), options(c.in)); });
  op("full", [](Case& c) { full(c.in.shape(), c.in.scalar(), options(c.in)); });
  op("arange", [](Case& c) {
    const double start = c.in.pick<double>({0.0, -3.0, 2.5, 1e13, -1e13, std::nan("")});
    const double stop = c.in.pick<double>({0.0, 5.0, -2.0, 1e13, 1e300});
    const double step = c.in.pick<double>({1.0, -1.0, 0.5, 0.0, 1e-3, -0.25});
    c.in.desc += "arange(" + std::to_string(start) + ", " + std::to_string(stop) + ", " + std::to_string(step) + ") ";
    arange(start, stop, step, options(c.in));
  });
  op("rand", [](Case& c) {
    RandomOptions r;
    if (c.in.chance(30)) r.seed = 7;
    rand(c.in.shape(), options(c.in), r);
  });
  op("randn", [](Case& c) { randn(c.in.shape(), options(c.in)); });
  op("from_vector", [](Case& c) {
    const std::vector<float> values(static_cast<std::size_t>(c.in.below(30)), 1.0f);
    c.in.desc += std::to_string(values.size()) + " values ";
    from_vector(values, c.in.shape(), c.in.device());
  });
  op("from_vector/i32", [](Case& c) {
    const std::vector<std::int32_t> values(static_cast<std::size_t>(c.in.below(8)), 3);
    from_vector(values, c.in.device());
  });
  // Elementwise.
  using Binary = Tensor (*)(const Tensor&, const Tensor&, Loc);
  for (auto [name, f] : {std::pair<const char*, Binary>{"add", add}, {"sub", sub}, {"mul", mul}, {"div", div},
                         {"eq", eq}, {"relu_backward", relu_backward}, {"pow", pow}, {"ne", ne}, {"gt", gt},
                         {"ge", ge}, {"lt", lt}, {"le", le}, {"maximum", maximum}, {"minimum", minimum}})
    op(name, [f = f](Case& c) { f(c.pool.pick(c.in), c.pool.pick(c.in), Loc::current()); });
  using WithScalar = Tensor (*)(const Tensor&, double, Loc);
  for (auto [name, f] : {std::pair<const char*, WithScalar>{"add(s)", add}, {"sub(s)", sub}, {"rsub", rsub},
                         {"mul(s)", mul}, {"div(s)", div}, {"rdiv", rdiv}, {"pow(s)", pow}, {"rpow", rpow},
                         {"gt(s)", gt}, {"le(s)", le}, {"eq(s)", eq}, {"maximum(s)", maximum},
                         {"minimum(s)", minimum}})
    op(name, [f = f](Case& c) { f(c.pool.pick(c.in), c.in.scalar(), Loc::current()); });
  using Unary = Tensor (*)(const Tensor&, Loc);
  for (auto [name, f] : {std::pair<const char*, Unary>{"neg", neg}, {"exp", exp}, {"log", log}, {"relu", relu},
                         {"linear_backward_bias", linear_backward_bias}, {"sqrt", sqrt}, {"tanh", tanh},
                         {"sigmoid", sigmoid}, {"abs", abs}})
    op(name, [f = f](Case& c) { f(c.pool.pick(c.in), Loc::current()); });
  using InPlace = void (*)(Tensor&, const Tensor&, Loc);
  for (auto [name, f] : {std::pair<const char*, InPlace>{"add_", add_}, {"sub_", sub_}, {"mul_", mul_},
                         {"copy_", copy_}})
    op(name, [f = f](Case& c) { f(c.pool.pick(c.in), c.pool.pick(c.in), Loc::current()); });
  using InPlaceScalar = void (*)(Tensor&, double, Loc);
  for (auto [name, f] : {std::pair<const char*, InPlaceScalar>{"add_(s)", add_}, {"mul_(s)", mul_}})
    op(name, [f = f](Case& c) { f(c.pool.pick(c.in), c.in.scalar(), Loc::current()); });
  op("clamp", [](Case& c) {
    const double lo = c.in.scalar(), hi = c.in.scalar();
    clamp(c.pool.pick(c.in), c.in.chance(20) ? std::optional<double>() : lo,
          c.in.chance(20) ? std::optional<double>() : hi);
  });
  op("copy_to", [](Case& c) { copy_to(c.pool.pick(c.in), c.in.device()); });
  op("to_dtype", [](Case& c) { to_dtype(c.pool.pick(c.in), c.in.dtype()); });
  // Reductions.
  using Reduce = Tensor (*)(const Tensor&, Loc);
  using ReduceAxis = Tensor (*)(const Tensor&, int, Loc);
  for (auto [name, f] : {std::pair<const char*, Reduce>{"sum", sum}, {"mean", mean}, {"max", max}})
    op(name, [f = f](Case& c) { f(c.pool.pick(c.in), Loc::current()); });
  for (auto [name, f] : {std::pair<const char*, ReduceAxis>{"sum(axis)", sum}, {"mean(axis)", mean},
                         {"max(axis)", max}})
    op(name, [f = f](Case& c) { f(c.pool.pick(c.in), c.in.axis(), Loc::current()); });
  op("argmax", [](Case& c) { argmax(c.pool.pick(c.in), c.in.axis(), c.in.dtype()); });
  // Views and the copies that reorder.
  op("reshape", [](Case& c) {
    std::vector<std::int64_t> dims = c.in.extents();
    if (!dims.empty() && c.in.chance(30)) dims[static_cast<std::size_t>(c.in.below(static_cast<int>(dims.size())))] = -1;
    reshape(c.pool.pick(c.in), dims);
  });
  op("squeeze", [](Case& c) { squeeze(c.pool.pick(c.in), c.in.axis()); });
  op("unsqueeze", [](Case& c) { unsqueeze(c.pool.pick(c.in), c.in.axis()); });
  op("transpose", [](Case& c) { transpose(c.pool.pick(c.in), c.in.axis(), c.in.axis()); });
  op("permute", [](Case& c) {
    std::vector<int> order(static_cast<std::size_t>(c.in.below(5)));
    for (int& a : order) a = c.in.axis();
    permute(c.pool.pick(c.in), order);
  });
  op("slice", [](Case& c) {
    const std::int64_t step = c.in.pick<std::int64_t>({1, 2, -1, -3, 0, INT64_MIN, INT64_MAX});
    slice(c.pool.pick(c.in), c.in.axis(), c.in.count(), c.in.count(), step);
  });
  op("select", [](Case& c) { select(c.pool.pick(c.in), c.in.axis(), c.in.count()); });
  op("cat", [](Case& c) {
    std::vector<Tensor> ts(static_cast<std::size_t>(c.in.below(4)));
    for (Tensor& t : ts) t = c.pool.pick(c.in);
    cat(ts, c.in.axis());
  });
  op("stack", [](Case& c) {
    std::vector<Tensor> ts(static_cast<std::size_t>(c.in.below(4)));
    for (Tensor& t : ts) t = c.pool.pick(c.in);
    stack(ts, c.in.axis());
  });
  op("softmax", [](Case& c) { softmax(c.pool.pick(c.in), c.in.axis()); });
  op("log_softmax", [](Case& c) { log_softmax(c.pool.pick(c.in), c.in.axis()); });
  op("strided", [](Case& c) {
    const Shape s = c.in.shape();
    std::vector<std::int64_t> strides(static_cast<std::size_t>(s.ndim()));
    for (auto& x : strides) x = c.in.count();
    if (c.in.chance(10)) strides.push_back(1);
    strided(c.pool.pick(c.in), s, strides, c.in.count());
  });
  // Autograd.
  op("set_requires_grad", [](Case& c) { c.pool.pick(c.in).set_requires_grad(c.in.chance(70)); });
  op("set_grad", [](Case& c) {
    Tensor& t = c.pool.pick(c.in);
    t.set_grad(c.in.chance(20) ? Tensor() : c.pool.pick(c.in));
  });
  op("backward", [](Case& c) {
    Tensor& t = c.pool.pick(c.in);
    backward(t, c.in.chance(50) ? c.pool.pick(c.in) : Tensor(), {.retain_graph = c.in.chance(50)});
  });
  // Linear algebra and nn.
  op("matmul", [](Case& c) {
    const bool ta = c.in.chance(50), tb = c.in.chance(50);
    matmul(c.pool.pick(c.in), c.pool.pick(c.in), ta, tb);
  });
  op("parse_matmul_precision", [](Case& c) {
    parse_matmul_precision(c.in.pick<const char*>({"exact", "tf32", "bf16", "", "fp8", "EXACT"}));
  });
  op("linear", [](Case& c) { linear(c.pool.pick(c.in), c.pool.pick(c.in), c.pool.pick(c.in)); });
  op("linear_backward_weight", [](Case& c) { linear_backward_weight(c.pool.pick(c.in), c.pool.pick(c.in)); });
  op("linear_backward_input", [](Case& c) { linear_backward_input(c.pool.pick(c.in), c.pool.pick(c.in)); });
  op("softmax_cross_entropy", [](Case& c) { softmax_cross_entropy(c.pool.pick(c.in), c.pool.pick(c.in)); });
  op("softmax_cross_entropy_backward",
      [](Case& c) { softmax_cross_entropy_backward(c.pool.pick(c.in), c.pool.pick(c.in)); });
  op("sgd_step_", [](Case& c) {
    Tensor& p = c.pool.pick(c.in);
    sgd_step_(p, c.pool.pick(c.in), c.pool.pick(c.in), sgd(c.in));
  });
  op("adam_step_", [](Case& c) {
    Tensor& p = c.pool.pick(c.in);
    adam_step_(p, c.pool.pick(c.in), c.pool.pick(c.in), c.pool.pick(c.in), c.in.count(), adam(c.in));
  });
  // Blockers.
  op("item", [](Case& c) { c.pool.pick(c.in).item<double>(); });
  op("to_vector", [](Case& c) { c.pool.pick(c.in).to_vector<float>(); });
  op("wait_to_read", [](Case& c) { c.pool.pick(c.in).wait_to_read(); });
  op("print", [](Case& c) {
    std::ostringstream os;
    os << c.pool.pick(c.in);
  });
  // Host collectives of the one-rank world.
  op("all_reduce_", [](Case& c) { c.rt.world().all_reduce_(c.pool.pick(c.in), c.in.reduce_op()); });
  op("all_reduce_(devices)", [](Case& c) {
    std::vector<Tensor> per_device;
    for (int i = c.in.below(4); i > 0; --i) per_device.push_back(c.pool.pick(c.in));
    c.rt.world().all_reduce_(per_device, c.in.reduce_op());
  });
  op("all_reduce", [](Case& c) { c.rt.world().all_reduce(c.pool.pick(c.in), c.in.reduce_op()); });
  op("broadcast_", [](Case& c) { c.rt.world().broadcast_(c.pool.pick(c.in), c.in.rank_arg()); });
  op("broadcast", [](Case& c) { c.rt.world().broadcast(c.pool.pick(c.in), c.in.rank_arg()); });
  op("all_gather", [](Case& c) { c.rt.world().all_gather(c.pool.pick(c.in)); });
  op("reduce_scatter", [](Case& c) { c.rt.world().reduce_scatter(c.pool.pick(c.in), c.in.reduce_op()); });
  op("barrier", [](Case& c) { c.rt.world().barrier(); });
  op("check_sync", [](Case& c) { c.rt.world().check_sync(); });
  op("split", [](Case& c) { c.rt.world().split(c.in.rank_arg(), c.in.rank_arg()); });
  return v;
}

/// A tensor whose engine is gone: any use must be a tide::UsageError.
Tensor tensor_of_a_destroyed_engine() {
  EngineOptions o;
  o.cuda_devices = 0;
  auto engine = Engine::create(o);
  EngineScope scope(*engine);
  return zeros({3});
}

TEST(Fuzz, BadInputIsRefusedWithATideErrorAndPushesNothing) {
  const std::uint64_t cases = env_u64("TIDE_FUZZ_CASES", 100000);
  const std::uint64_t seed = env_u64("TIDE_FUZZ_SEED", 1);
  const bool trace = env_u64("TIDE_FUZZ_TRACE", 0) != 0;
  Pool pool(tensor_of_a_destroyed_engine());

  RuntimeOptions ro;
  ro.engine.cpu_devices = 2;
  ro.engine.cuda_devices = 0;
  Runtime rt(ro);
  Engine& e = rt.engine();
  Inputs in(seed);
  pool.refill(in);
  const std::vector<Op> table = ops();

  std::uint64_t refused = 0, out_of_memory = 0, shape_errors = 0, failures = 0;
  for (std::uint64_t i = 0; i < cases && failures < 20; ++i) {
    if (i % 512 == 511) {
      try {
        rt.wait_all();  // reports (and clears) the failures of accepted ops
      } catch (const Error&) {
      }
      pool.refill(in);
    }
    const Op& op = table[static_cast<std::size_t>(in.below(static_cast<int>(table.size())))];
    in.desc.clear();
    Case c{in, pool, rt};
    const std::uint64_t pushed = e.pushed();
    const std::uint64_t rng_offset = e.take_rng_offset(0);
    auto where = [&] {
      return "case " + std::to_string(i) + " (TIDE_FUZZ_SEED=" + std::to_string(seed) + "): " + op.name + " " + in.desc;
    };
    if (trace) std::fprintf(stderr, "case %llu: %s\n", static_cast<unsigned long long>(i), op.name);
    try {
      op.fn(c);
      continue;
    } catch (const Error& err) {
      ++refused;
      if (dynamic_cast<const OutOfMemoryError*>(&err)) ++out_of_memory;
      if (dynamic_cast<const ShapeError*>(&err)) ++shape_errors;
    } catch (const std::exception& ex) {
      ++failures;
      ADD_FAILURE() << where() << "threw a non-tide exception: " << ex.what();
    } catch (...) {
      ++failures;
      ADD_FAILURE() << where() << "threw something that is not a std::exception";
    }
    if (e.pushed() != pushed) {
      ++failures;
      ADD_FAILURE() << where() << "was refused but pushed " << e.pushed() - pushed << " op(s)";
    }
    if (e.take_rng_offset(0) != rng_offset) {
      ++failures;
      ADD_FAILURE() << where() << "was refused but advanced the RNG offset";
    }
  }
  try {
    rt.wait_all();
  } catch (const Error&) {
  }
  auto ull = [](std::uint64_t x) { return static_cast<unsigned long long>(x); };
  std::printf("fuzz: %llu cases (seed %llu), %llu refused (%llu ShapeError, %llu OutOfMemoryError)\n", ull(cases),
              ull(seed), ull(refused), ull(shape_errors), ull(out_of_memory));
  // Both outcomes must be common, or the inputs test little.
  EXPECT_GT(refused, cases / 10);
  EXPECT_LT(refused, cases - cases / 10);
  if (cases >= 10000) {
    EXPECT_GT(shape_errors, 0u);
    EXPECT_GT(out_of_memory, 0u);
  }
}

}  // namespace
}  // namespace tide::fuzz
