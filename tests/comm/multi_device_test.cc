// all_reduce_ over several devices of a rank, then over ranks. Device d of
// rank r contributes values derived from g = r * devices + d, so every
// expected result is exact. Tests that need several devices skip unless the
// engine has them (ctest runs this file with --tide-cpu-devices=3 and 6).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "collective_values.h"
#include "mpi_test.h"

namespace tide::test {
namespace {

// The local reduction's ops: the first reads up to kInline devices' tensors;
// each later one reads kInline - 1 more and the buffer it adds to.
constexpr int kFirst = StorageList::kInline, kLater = StorageList::kInline - 1;
int local_reduce_ops(int devices) { return devices <= kFirst ? 1 : 1 + (devices - kFirst + kLater - 1) / kLater; }
int local_reduce_op_of(int device) { return device < kFirst ? 0 : 1 + (device - kFirst) / kLater; }

// The engine's CPU devices (cpu:0..k-1; its GPUs, if any, come after them).
int engine_devices() {
  int k = 0;
  for (const Device& d : rt().engine().devices()) k += d.is_cpu() ? 1 : 0;
  return k;
}

/// One tensor per listed device; the tensor on the i-th listed device of
/// rank r contributes g = r * devices.size() + i.
template <typename T>
std::vector<Tensor> per_device(const std::vector<int>& devices, std::int64_t n) {
  const int r = world().rank(), k = static_cast<int>(devices.size());
  std::vector<Tensor> ts;
  for (int i = 0; i < k; ++i)
    ts.push_back(from_vector(contribution<T>(r * k + i, n), cpu(devices[static_cast<std::size_t>(i)])));
  return ts;
}

std::vector<int> first_devices(int k) {
  std::vector<int> d(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) d[static_cast<std::size_t>(i)] = i;
  return d;
}

template <typename T>
void check_values(const std::vector<Tensor>& ts, ReduceOp op, int n_contributors, const std::string& what) {
  for (std::size_t i = 0; i < ts.size(); ++i) {
    std::vector<T> got = ts[i].to_vector<T>();
    std::int64_t wrong = 0;
    for (std::size_t j = 0; j < got.size(); ++j)
      if (got[j] != expected_reduce<T>(op, n_contributors, static_cast<std::int64_t>(j))) ++wrong;
    EXPECT_EQ(wrong, 0) << what << ", tensor " << i << " on " << ts[i].device().str() << ", first element "
                        << (got.empty() ? 0.0 : static_cast<double>(got[0]));
  }
}

template <typename T>
void check_all_reduce(const std::vector<int>& devices, const std::vector<std::int64_t>& counts) {
  const int k = static_cast<int>(devices.size()), p = world().size();
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
    if (op == ReduceOp::avg && !is_floating(dtype_v<T>)) continue;
    for (std::int64_t n : counts) {
      std::vector<Tensor> ts = per_device<T>(devices, n);
      world().all_reduce_(ts, op);
      check_values<T>(ts, op, k * p,
                      std::string(reduce_op_name(op)) + " " + dtype_name(dtype_v<T>) + " n=" + std::to_string(n) +
                          " over " + std::to_string(k) + " devices");
    }
  }
}

#define TIDE_NEED_DEVICES(k)                                                                      \
  do {                                                                                            \
    if (engine_devices() < (k)) {                                                                 \
      GTEST_SKIP() << "needs an engine with " << (k) << " cpu devices (--tide-cpu-devices)";      \
    }                                                                                             \
  } while (0)

TEST(MultiDevice, EveryOpAndDtypeOnEveryDevice) {
  TIDE_NEED_DEVICES(2);
  const std::vector<std::int64_t> counts = {0, 1, 1001, 1 << 20};
  check_all_reduce<float>(first_devices(engine_devices()), counts);
  check_all_reduce<double>(first_devices(engine_devices()), counts);
  check_all_reduce<std::int32_t>(first_devices(engine_devices()), counts);
}

TEST(MultiDevice, ASubsetOfDevicesInAnyOrder) {
  TIDE_NEED_DEVICES(2);
  // Without cpu:0 when there are enough devices: the ops still run on
  // cpu:0's comm stream, reading and writing the other devices' storages.
  const int d = engine_devices();
  const std::vector<int> devices = d >= 3 ? std::vector<int>{d - 1, 1} : std::vector<int>{1, 0};
  check_all_reduce<float>(devices, {1, 1001});
  check_all_reduce<std::int32_t>(devices, {1, 1001});
}

TEST(MultiDevice, OneTensorIsAPlainAllReduce) {
  // Runs with any number of devices.
  const int r = world().rank(), p = world().size();
  std::vector<Tensor> ts = {from_vector(contribution<double>(r, 1001))};
  rt().wait_all();
  const auto pushed = rt().stats().ops_pushed;
  world().all_reduce_(ts, ReduceOp::avg);
  EXPECT_EQ(rt().stats().ops_pushed, pushed + 1) << "one op, like all_reduce_(t)";
  check_values<double>(ts, ReduceOp::avg, p, "one tensor");
}

TEST(MultiDevice, RunsAsChunkedOpsOnCpu0CommStream) {
  TIDE_NEED_DEVICES(2);
  const int k = engine_devices();
  std::vector<Tensor> ts = per_device<float>(first_devices(k), 100);
  rt().wait_all();
  rt().engine().set_tracing(true);
  world().all_reduce_(ts);
  rt().wait_all();
  rt().engine().set_tracing(false);
  int local = 0, across = 0, back = 0;
  for (const TraceEvent& ev : rt().engine().take_trace()) {
    const std::string name = ev.op;
    if (name != "all_reduce_local" && name != "all_reduce" && name != "all_reduce_write_back") continue;
    EXPECT_EQ(rt().engine().stream_name(ev.stream), "cpu:0/comm") << name;
    local += name == "all_reduce_local";
    across += name == "all_reduce";
    back += name == "all_reduce_write_back";
  }
  EXPECT_EQ(local, local_reduce_ops(k));
  EXPECT_EQ(across, 1);
  EXPECT_EQ(back, (k + StorageList::kInline - 1) / StorageList::kInline);
  check_values<float>(ts, ReduceOp::sum, k * world().size(), "traced");
}

// A raw op on `device`'s compute stream that sleeps (widening the window in
// which a missing dependency would show) and then fills `t` with `value`.
void slow_fill(Tensor& t, float value, int sleep_ms) {
  OpDesc op;
  op.name = "slow_fill";
  op.device = t.device();
  op.stream = static_cast<int>(StreamKind::compute);
  op.writes = {t.storage()};
  const std::int64_t n = t.numel();
  op.fn = [n, value, sleep_ms](const OpContext& c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    float* out = c.out<float>(0);
    for (std::int64_t i = 0; i < n; ++i) out[i] = value;
  };
  current_engine().push(std::move(op));
}

const TraceEvent* find_event(const std::vector<TraceEvent>& trace, const std::string& name, const std::string& stream) {
  for (const TraceEvent& ev : trace)
    if (ev.op == name && rt().engine().stream_name(ev.stream) == stream) return &ev;
  return nullptr;
}

TEST(MultiDevice, WaitsForTheProducerOnEachDevice) {
  // RAW: each tensor is produced by a slow op on its own device's compute
  // stream; the local reduction must start only after all of them.
  TIDE_NEED_DEVICES(2);
  const int k = engine_devices(), r = world().rank(), p = world().size();
  std::vector<Tensor> ts;
  for (int d = 0; d < k; ++d) ts.push_back(Tensor::empty(Shape{1000}, DType::f32, cpu(d)));
  rt().wait_all();
  rt().engine().set_tracing(true);
  for (int d = 0; d < k; ++d) slow_fill(ts[static_cast<std::size_t>(d)], static_cast<float>(r * k + d + 1), 20);
  world().all_reduce_(ts);
  rt().wait_all();
  rt().engine().set_tracing(false);
  const auto trace = rt().engine().take_trace();
  const float want = static_cast<float>(k * p * (k * p + 1) / 2);
  for (int d = 0; d < k; ++d)
    EXPECT_EQ(ts[static_cast<std::size_t>(d)].to_vector<float>(), std::vector<float>(1000, want)) << "cpu:" << d;
  // The local reduction runs in device order on one stream: local op
  // local_reduce_op_of(d) reads device d.
  std::vector<const TraceEvent*> local;
  for (const TraceEvent& ev : trace)
    if (std::string(ev.op) == "all_reduce_local") local.push_back(&ev);
  std::sort(local.begin(), local.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
  ASSERT_EQ(static_cast<int>(local.size()), local_reduce_ops(k));
  for (int d = 0; d < k; ++d) {
    const std::string stream = "cpu:" + std::to_string(d) + "/compute";
    const TraceEvent* fill = find_event(trace, "slow_fill", stream);
    ASSERT_NE(fill, nullptr) << stream;
    EXPECT_LE(fill->end_ns, local[static_cast<std::size_t>(local_reduce_op_of(d))]->start_ns)
        << "the reduction read " << stream << "'s tensor before its producer ended";
  }
}

TEST(MultiDevice, ConsumersOnEachDeviceSeeTheReducedValues) {
  // RAW after: t * 2 runs on t's device's compute stream.
  TIDE_NEED_DEVICES(2);
  const int k = engine_devices(), p = world().size();
  std::vector<Tensor> ts = per_device<float>(first_devices(k), 1000);
  world().all_reduce_(ts);
  std::vector<Tensor> doubled;
  for (const Tensor& t : ts) doubled.push_back(t * 2);
  for (int d = 0; d < k; ++d) {
    ASSERT_EQ(doubled[static_cast<std::size_t>(d)].device(), cpu(d));
    std::vector<float> got = doubled[static_cast<std::size_t>(d)].to_vector<float>();
    for (std::size_t j = 0; j < got.size(); ++j)
      ASSERT_EQ(got[j], 2 * expected_reduce<float>(ReduceOp::sum, k * p, static_cast<std::int64_t>(j))) << "cpu:" << d;
  }
}

TEST(MultiDevice, ALaterWriterWaitsForTheReduction) {
  // WAR and WAW: a fill of the last device's tensor, pushed right after the
  // all-reduce on that device's compute stream, must neither change what the
  // reduction read (the other devices' results stay exact) nor be
  // overwritten by the copy back (the last tensor ends with the fill).
  TIDE_NEED_DEVICES(2);
  const int k = engine_devices(), p = world().size();
  std::vector<Tensor> ts = per_device<float>(first_devices(k), 1000);
  rt().wait_all();
  rt().engine().set_tracing(true);
  world().all_reduce_(ts);
  slow_fill(ts.back(), -5.0f, 0);
  for (std::size_t d = 0; d + 1 < ts.size(); ++d) ts[d] += 1.0;  // read-modify-write on each device
  rt().wait_all();
  rt().engine().set_tracing(false);
  const auto trace = rt().engine().take_trace();
  EXPECT_EQ(ts.back().to_vector<float>(), std::vector<float>(1000, -5.0f));
  for (std::size_t d = 0; d + 1 < ts.size(); ++d) {
    std::vector<float> got = ts[d].to_vector<float>();
    for (std::size_t j = 0; j < got.size(); ++j)
      ASSERT_EQ(got[j], expected_reduce<float>(ReduceOp::sum, k * p, static_cast<std::int64_t>(j)) + 1) << "cpu:" << d;
  }
  const TraceEvent* fill = find_event(trace, "slow_fill", "cpu:" + std::to_string(k - 1) + "/compute");
  ASSERT_NE(fill, nullptr);
  for (const TraceEvent& ev : trace) {
    if (std::string(ev.op) == "all_reduce_write_back" || std::string(ev.op) == "all_reduce_local") {
      EXPECT_LE(ev.end_ns, fill->start_ns) << ev.op << " ended after the later writer started";
    }
  }
}

TEST(MultiDevice, BadInputIsAClearErrorAndNothingIsQueued) {
  // Runs with any number of devices.
  std::vector<Tensor> none;
  std::vector<Tensor> same_device = {zeros({4}), zeros({4})};
  std::vector<Tensor> undefined = {zeros({4}), Tensor()};
  rt().wait_all();
  const auto pushed = rt().stats().ops_pushed;
  EXPECT_THROW(world().all_reduce_(none), ValueError);
  try {
    world().all_reduce_(same_device);
    ADD_FAILURE() << "two tensors on cpu:0 must throw";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 1 is on cpu:0 like tensor 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(world().all_reduce_(undefined), UndefinedTensorError);
  EXPECT_EQ(rt().stats().ops_pushed, pushed);
}

TEST(MultiDevice, MismatchedTensorsAreAClearErrorAndNothingIsQueued) {
  TIDE_NEED_DEVICES(2);
  std::vector<Tensor> shapes = {zeros({4}, {DType::f32, cpu(0)}), zeros({2, 2}, {DType::f32, cpu(1)})};
  std::vector<Tensor> dtypes = {zeros({4}, {DType::f32, cpu(0)}), zeros({4}, {DType::f64, cpu(1)})};
  std::vector<Tensor> ints = {zeros({4}, {DType::i32, cpu(0)}), zeros({4}, {DType::i32, cpu(1)})};
  rt().wait_all();
  const auto pushed = rt().stats().ops_pushed;
  try {
    world().all_reduce_(shapes);
    ADD_FAILURE() << "shapes [4] and [2, 2] must throw";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 1 has shape"), std::string::npos) << e.what();
  }
  EXPECT_THROW(world().all_reduce_(dtypes), DTypeError);
  EXPECT_THROW(world().all_reduce_(ints, ReduceOp::avg), DTypeError);
  EXPECT_EQ(rt().stats().ops_pushed, pushed);
  // The same tensors are fine once they match.
  world().all_reduce_(ints, ReduceOp::max);
  EXPECT_EQ(ints[1].to_vector<std::int32_t>(), std::vector<std::int32_t>(4, 0));
}

}  // namespace
}  // namespace tide::test
