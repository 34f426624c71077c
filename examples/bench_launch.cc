// Launch throughput of tiny ops on a GPU: tide's y = x + 1 (push, dependency
// tracking, a worker launching on the stream, an event after runs of ops, a
// completion thread) against a bare loop of kernel launches on one stream,
// alternated in one run. Beside them, the steps between the two, each
// measured in the same run so that the differences say where tide's time
// goes: the bare loop with an event per 128 launches and a thread polling
// them; the bare loop's launches made by a second thread it hands them to
// (what moving work off the caller's thread costs by itself); and tide
// running the bare loop's kernel as a raw engine op (tide's engine and
// stream without the ops library's checks, table and kernel).
//
//   bench_launch [--device cuda:0] [--ops 20000] [--repeats 7] [--elements 2]
//                [--max-queued-ops N] [--max-unlaunched-gpu-ops N] [--json FILE]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <tide/tide.h>

#include "common/cli.h"
#include "common/json_writer.h"
#include "common/machine.h"
#include "common/timing.h"
#include "launch/bare_loop.h"

namespace {

using tide::examples::at_least;
using tide::examples::median;
using tide::examples::now_ns;

struct Options {
  tide::Device device = tide::cuda(0);
  int ops = 20000, repeats = 7, elements = 2;
  std::uint64_t max_queued_ops = 0;          // 0: the sync policy's default
  std::int64_t max_unlaunched_gpu_ops = -1;  // < 0: the sync policy's default
  std::string json;
  bool check = false;  // --check: exit 3 when a target is missed
};

/// Reads the command line into `o`. Returns -1 when the program goes on,
/// else the status to end it with (0 after --help, 2 after a bad argument).
int parse(int argc, char** argv, Options& o) {
  CLI::App app{"Launch throughput of tiny ops on a GPU: tide's y = x + 1 against a bare loop of kernel launches."};
  app.option_defaults()->always_capture_default();
  std::string device = o.device.str();
  app.add_option("--device", device, "the GPU to measure: cuda:N")->check(tide::examples::device_name());
  app.add_option("--ops", o.ops, "ops (and launches) per timed run")->check(at_least(1));
  app.add_option("--repeats", o.repeats, "timed runs of each loop, alternated (the median is reported)")
      ->check(at_least(1));
  app.add_option("--elements", o.elements, "elements of x")->check(at_least(1));
  app.add_option("--max-queued-ops", o.max_queued_ops,
                 "how many ops the frontend may have queued and not completed (SyncPolicy::max_queued_ops; 0: the "
                 "default)");
  app.add_option("--max-unlaunched-gpu-ops", o.max_unlaunched_gpu_ops,
                 "how many ops the GPU stream may have pushed and not launched (SyncPolicy::max_unlaunched_gpu_ops; "
                 "0: unbounded; default: the library's)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--json", o.json, "also write every number as JSON to this file");
  tide::examples::add_check_flag(app, o.check);
  const int status = tide::examples::parse_command_line(app, argc, argv);
  if (status >= 0) return status;
  o.device = tide::Device::parse(device);
  return -1;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string command_line = tide::examples::command_line(argc, argv);
  auto runtime = tide::Runtime::init(argc, argv);
  Options o;
  if (const int status = parse(argc, argv, o); status >= 0) return status;
  if (const int status = tide::examples::gpu_only("bench_launch", "GPU launches", o.device); status >= 0) return status;
  runtime->engine().check_device(o.device);
  if (o.max_queued_ops > 0 || o.max_unlaunched_gpu_ops >= 0) {
    tide::SyncPolicy p = runtime->engine().policy();
    if (o.max_queued_ops > 0) p.max_queued_ops = o.max_queued_ops;
    if (o.max_unlaunched_gpu_ops >= 0) p.max_unlaunched_gpu_ops = static_cast<std::uint64_t>(o.max_unlaunched_gpu_ops);
    runtime->engine().set_policy(p);
  }
  tide::examples::BareLoop bare(o.device.index, o.elements);
  tide::Tensor x = tide::zeros({o.elements}, {tide::DType::f32, o.device});
  // Where a tide op's time goes, per run: the frontend's pushes (the loop
  // before wait_all, sync-policy stalls included), and the time the ops
  // spent in their run on the GPU's compute stream (the op's closure and
  // its launch, on the worker or, when the stream is idle, the frontend).
  const std::string compute = o.device.str() + "/compute";
  auto stream_stat = [&] {
    for (const tide::StreamStat& st : runtime->engine().stats().streams)
      if (st.name == compute) return st;
    return tide::StreamStat{};
  };
  // And when every op had been launched (had run on the stream, looked at
  // every 50 us): if that is about the whole time, the launches set the
  // pace; if the device finishes well after, its work does.
  std::vector<double> push_ns, run_ns, stalled_ns, launched_ns;
  auto tide_loop = [&] {
    const tide::StreamStat s0 = stream_stat();
    const std::int64_t stalled0 = runtime->engine().stats().stalled_ns;
    const std::int64_t t0 = now_ns();
    for (int i = 0; i < o.ops; ++i) tide::Tensor y = x + 1;
    const std::int64_t t1 = now_ns();
    while (stream_stat().ops - s0.ops < static_cast<std::uint64_t>(o.ops))
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    const std::int64_t t2 = now_ns();
    runtime->wait_all();
    const tide::StreamStat s1 = stream_stat();
    push_ns.push_back(static_cast<double>(t1 - t0) / o.ops);
    launched_ns.push_back(static_cast<double>(t2 - t0) / o.ops);
    run_ns.push_back(s1.ops > s0.ops ? static_cast<double>(s1.busy_ns - s0.busy_ns) / static_cast<double>(s1.ops - s0.ops)
                                     : 0.0);
    stalled_ns.push_back(static_cast<double>(runtime->engine().stats().stalled_ns - stalled0) / o.ops);
  };
  // The same ops pushed raw, each launching the bare loop's kernel into a
  // fresh output as x + 1 does: the engine, its stream and worker, without
  // the ops library.
  const auto raw_op = [&] {
    tide::Tensor y = tide::Tensor::empty(x.shape(), x.dtype(), x.device());
    tide::OpDesc op;
    op.name = "raw_add_one";
    op.device = o.device;
    op.memory_bound = true;  // as the ops library marks an elementwise op
    op.launch_only = true;
    op.reads.add(x.storage());
    op.writes.add(y.storage());
    const int n = o.elements;
    op.fn = [n](const tide::OpContext& c) {
      tide::examples::BareLoop::launch_add_one(c.in<void>(0), c.out<void>(0), n, c.native_stream);
    };
    runtime->engine().push(std::move(op));
  };
  auto raw_loop = [&] {
    const std::int64_t t0 = now_ns();
    for (int i = 0; i < o.ops; ++i) raw_op();
    runtime->wait_all();
    return static_cast<double>(now_ns() - t0) / o.ops;
  };
  // Warm-up: module load, pool growth, worker wake-up.
  bare.run(1000);
  bare.run_handed_off(1000);
  raw_loop();
  tide_loop();
  push_ns.clear();
  run_ns.clear();
  stalled_ns.clear();
  launched_ns.clear();

  // Beside the bare loop, the same loop with what tide's completion
  // tracking adds on the driver's side: an event after every 128th launch,
  // then also a thread querying the latest event all the time (tide's
  // completion thread queries for about 20 us per event, then sleeps).
  // Each step's cost tells how much of tide's gap is the driver's.
  using Extra = tide::examples::BareLoop::Extra;
  std::vector<double> bare_launch_ns;  // the plain loop's launches alone
  auto per_launch = [&](Extra extra) {
    const std::int64_t t0 = now_ns();
    const long long launching = bare.run(o.ops, extra);
    if (extra == Extra::none) bare_launch_ns.push_back(static_cast<double>(launching) / o.ops);
    return static_cast<double>(now_ns() - t0) / o.ops;
  };
  std::vector<double> bare_ns, events_ns, polled_ns, handed_ns, raw_ns, tide_ns;
  for (int r = 0; r < o.repeats; ++r) {  // alternated, so drift hits all alike
    bare_ns.push_back(per_launch(Extra::none));
    events_ns.push_back(per_launch(Extra::events));
    polled_ns.push_back(per_launch(Extra::polled));
    {
      const std::int64_t t0 = now_ns();
      bare.run_handed_off(o.ops);
      handed_ns.push_back(static_cast<double>(now_ns() - t0) / o.ops);
    }
    raw_ns.push_back(raw_loop());
    const std::int64_t t0 = now_ns();
    tide_loop();
    tide_ns.push_back(static_cast<double>(now_ns() - t0) / o.ops);
  }
  const double b = median(bare_ns), t = median(tide_ns);
  const double be = median(events_ns), bp = median(polled_ns), bh = median(handed_ns), raw = median(raw_ns);
  std::printf("bench_launch on %s: %d tiny ops (%d elements), median of %d; at most %llu ops queued, %llu not "
              "launched (0: unbounded)\n",
              o.device.str().c_str(), o.ops, o.elements, o.repeats,
              static_cast<unsigned long long>(runtime->engine().policy().max_queued_ops),
              static_cast<unsigned long long>(runtime->engine().policy().max_unlaunched_gpu_ops));
  const double bl = median(bare_launch_ns), tl = median(launched_ns);
  std::printf("  %-29s %8.0f ns per launch (%.0f ns of it launching)\n", "bare launch loop", b, bl);
  std::printf("  %-29s %8.0f ns per launch\n", "+ an event per 128", be);
  std::printf("  %-29s %8.0f ns per launch (the event, with a yield between queries)\n", "+ a thread polling", bp);
  std::printf("  %-29s %8.0f ns per launch (handed over through a ring)\n", "launched by a second thread", bh);
  std::printf("  %-29s %8.0f ns per op (the engine without the ops library)\n", "tide raw op, the bare kernel", raw);
  std::printf("  %-29s %8.0f ns per op (every op launched after %.0f ns per op)\n", "tide y = x + 1", t, tl);

  const double push = median(push_ns), run = median(run_ns), stalled = median(stalled_ns);
  // The frontend and the worker overlap: a tide op takes about the longer
  // of the push and the worker's time per op. When the worker is the slower
  // (push < t), t - run is what the worker's loop adds to each op's run
  // (hand-off, events); ops the frontend launches on an idle stream count
  // their run in both push and run.
  std::printf("  per tide op: %.0f ns pushing on the frontend (%.0f ns of it stalled by the sync policy),\n"
              "  %.0f ns in its run on %s (closure and launch); %.0f ns per op besides the run%s\n",
              push, stalled, run, compute.c_str(), t - run,
              push < t ? " (the worker's loop: hand-off, events)" : " (the frontend is the slower: t is its push)");
  std::printf("verdict: tide's tiny ops run at %.0f%% of the bare loop's throughput (target >= 90%%: %s)\n",
              100.0 * b / t, b / t >= 0.9 ? "met" : "MISSED");
  if (!o.json.empty()) {
    std::ofstream f = tide::examples::open_json(o.json);
    tide::examples::JsonWriter j(f);
    tide::examples::begin_benchmark(j, "bench_launch", command_line);
    j.key("device").value(o.device.str());
    j.key("ops").value(o.ops);
    j.key("elements").value(o.elements);
    j.key("max_queued_ops").value(runtime->engine().policy().max_queued_ops);
    j.key("max_unlaunched_gpu_ops").value(runtime->engine().policy().max_unlaunched_gpu_ops);
    j.key("bare_ns_per_launch").value(b);
    j.key("bare_events_ns_per_launch").value(be);
    j.key("bare_event_every").value(tide::examples::BareLoop::kEventEvery);
    j.key("bare_polled_ns_per_launch").value(bp);
    j.key("bare_handed_off_ns_per_launch").value(bh);
    j.key("tide_raw_op_ns_per_op").value(raw);
    j.key("tide_ns_per_op").value(t);
    j.key("throughput_vs_bare").value(b / t);
    j.key("push_ns_per_op").value(push);
    j.key("stalled_ns_per_op").value(stalled);
    j.key("run_ns_per_op").value(run);
    j.key("bare_launching_ns_per_launch").value(bl);
    j.key("tide_launched_ns_per_op").value(tl);
    j.key("bare_runs_ns").begin_array();
    for (double v : bare_ns) j.value(v);
    j.end_array();
    j.key("bare_events_runs_ns").begin_array();
    for (double v : events_ns) j.value(v);
    j.end_array();
    j.key("bare_polled_runs_ns").begin_array();
    for (double v : polled_ns) j.value(v);
    j.end_array();
    j.key("bare_handed_off_runs_ns").begin_array();
    for (double v : handed_ns) j.value(v);
    j.end_array();
    j.key("tide_raw_op_runs_ns").begin_array();
    for (double v : raw_ns) j.value(v);
    j.end_array();
    j.key("tide_runs_ns").begin_array();
    for (double v : tide_ns) j.value(v);
    j.end_array();
    j.end_object();
    f << "\n";
    std::printf("wrote %s\n", o.json.c_str());
  }
  return o.check && b / t < 0.9 ? tide::examples::kTargetMissed : 0;
} catch (const tide::Error& e) {
  std::fprintf(stderr, "bench_launch: %s\n", e.what());
  return 2;
}
