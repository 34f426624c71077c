// The Python module tide._tide: the runtime, errors and the frontend's
// waits. Tensors and ops are in tensor.cc. Every call that can wait for the
// backend (a barrier, a blocker, a step at the gate) releases the GIL, so
// other Python threads run meanwhile.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include <tide/tide.h>

#include "bindings.h"
#include "call_site.h"

namespace py = pybind11;

namespace tide::python {

namespace {

/// The process's runtime: made by init(), ended by shutdown() (which the
/// package registers with atexit).
std::unique_ptr<Runtime>& runtime_slot() {
  static auto* slot = new std::unique_ptr<Runtime>();  // outlives interpreter teardown
  return *slot;
}

/// Whether tide.shutdown() ran (no runtime is made after it), and whether
/// the runtime was made by a first use rather than tide.init().
bool g_shut_down = false;
bool g_started_on_first_use = false;

/// A script that never calls tide.init() gets the runtime tide.init() would
/// make, at its first op, as `import torch` needs no set-up: a world of one
/// rank, or the launcher's world under mpirun, tiderun or srun. The engine
/// fallback of current_engine() (core), and runtime() below.
Engine* start_on_first_use() {
  auto& slot = runtime_slot();
  if (!slot && !g_shut_down) {
    std::string name = "python";
    char* argv[] = {name.data(), nullptr};
    int argc = 1;
    slot = Runtime::init(argc, argv);
    g_started_on_first_use = true;
  }
  return current_engine_or_null();
}

Runtime& runtime() {
  auto& rt = runtime_slot();
  if (!rt && !g_shut_down) start_on_first_use();
  if (!rt) throw UsageError("tide: no runtime: tide.shutdown() ended it");
  return *rt;
}

/// What Python holds for the runtime: no pointer, so that a handle kept
/// past tide.shutdown() raises tide.UsageError instead of reaching freed
/// memory.
struct RuntimeHandle {};

/// A step as a context manager: `with rt.step(): ...`.
class PyStep {
 public:
  void enter() {
    Runtime& rt = runtime();
    const Loc loc = here();
    py::gil_scoped_release nogil;
    step_ = std::make_unique<Step>(rt.step(loc));
  }
  void exit() {
    // A step whose runtime has ended must not reach the engine it began on:
    // its record is dropped (a few bytes) instead of ended.
    if (!current_runtime_alive()) (void)step_.release();
    step_.reset();
  }

 private:
  static bool current_runtime_alive() { return runtime_slot() != nullptr; }
  std::unique_ptr<Step> step_;
};

void register_errors(py::module_& m) {
  // Base first: a handler for a derived class must be tried before its base,
  // so they are registered from the most general to the most specific
  // (pybind11 tries the last registered first).
  static py::exception<Error> base(m, "Error", PyExc_RuntimeError);
  py::register_exception<ShapeError>(m, "ShapeError", base.ptr());
  py::register_exception<DTypeError>(m, "DTypeError", base.ptr());
  py::register_exception<DeviceError>(m, "DeviceError", base.ptr());
  py::register_exception<UndefinedTensorError>(m, "UndefinedTensorError", base.ptr());
  py::register_exception<PolicyError>(m, "PolicyError", base.ptr());
  py::register_exception<ValueError>(m, "ValueError", base.ptr());
  py::register_exception<UsageError>(m, "UsageError", base.ptr());
  py::register_exception<FileError>(m, "FileError", base.ptr());
  py::register_exception<OutOfMemoryError>(m, "OutOfMemoryError", base.ptr());
  py::register_exception<BackendError>(m, "BackendError", base.ptr());
  py::register_exception<CommError>(m, "CommError", base.ptr());
}

}  // namespace

Runtime* current_runtime() { return runtime_slot().get(); }

}  // namespace tide::python

PYBIND11_MODULE(_tide, m) {
  using namespace tide;
  using namespace tide::python;
  m.doc() = "tide: an asynchronous execution engine (C++ backend, this frontend pushes ops and waits at barriers)";
  m.attr("__version__") = TIDE_VERSION;
  set_engine_fallback(&start_on_first_use);
  register_errors(m);

  // Stats as the C++ struct has it, read-only, field for field (busy_ns, the
  // streams' busy time summed, is kept beside backend_busy_ns, its C++ name).
  py::class_<BlockerSite>(m, "BlockerSite", "one call site that blocked the frontend")
      .def_readonly("kind", &BlockerSite::kind, "wait_to_read, wait_all, item, to_vector or print")
      .def_readonly("call_site", &BlockerSite::call_site, "file:line (function)")
      .def_readonly("count", &BlockerSite::count)
      .def_readonly("blocked_ns", &BlockerSite::blocked_ns)
      .def("__repr__", [](const BlockerSite& b) {
        return "BlockerSite(" + b.kind + " at " + b.call_site + ": " + std::to_string(b.count) + " calls, " +
               std::to_string(b.blocked_ns) + " ns)";
      });

  py::class_<StreamStat>(m, "StreamStat", "the work one stream's backend worker has done")
      .def_readonly("name", &StreamStat::name, "e.g. cpu:0/compute")
      .def_readonly("ops", &StreamStat::ops)
      .def_readonly("busy_ns", &StreamStat::busy_ns, "time spent running ops (waits for other streams excluded)")
      .def("__repr__", [](const StreamStat& st) {
        return "StreamStat(" + st.name + ": " + std::to_string(st.ops) + " ops, " + std::to_string(st.busy_ns) +
               " ns busy)";
      });

  py::class_<Stats>(m, "Stats")
      .def_readonly("ops_pushed", &Stats::ops_pushed)
      .def_readonly("ops_completed", &Stats::ops_completed)
      .def_readonly("ops_failed", &Stats::ops_failed, "threw on the backend")
      .def_readonly("ops_skipped", &Stats::ops_skipped, "not run: an input was poisoned, or cancelled")
      .def_readonly("cross_stream_waits", &Stats::cross_stream_waits, "event waits the dependency tracker added")
      .def_readonly("blockers", &Stats::blockers, "barrier and implicit-blocker calls")
      .def_readonly("blocked_ns", &Stats::blocked_ns)
      .def_readonly("blocker_sites", &Stats::blocker_sites, "a list of BlockerSite, one per call site")
      .def_readonly("stalls", &Stats::stalls, "sync-policy gate blocks")
      .def_readonly("stalled_ns", &Stats::stalled_ns)
      .def_readonly("stalls_steps", &Stats::stalls_steps, "stalls at the max_inflight_steps gate")
      .def_readonly("stalls_ops", &Stats::stalls_ops, "stalls at the max_queued_ops gate or a GPU stream's max_unlaunched_gpu_ops")
      .def_readonly("stalls_bytes", &Stats::stalls_bytes, "stalls at a queued-bytes gate")
      .def_readonly("stalling", &Stats::stalling,
                    "the frontend is in a stall now (counted in stalls once it ends)")
      .def_readonly("queued_ops", &Stats::queued_ops, "now")
      .def_readonly("queued_bytes", &Stats::queued_bytes, "now")
      .def_readonly("peak_queued_ops", &Stats::peak_queued_ops)
      .def_readonly("peak_queued_bytes", &Stats::peak_queued_bytes)
      .def_readonly("backend_busy_ns", &Stats::backend_busy_ns, "summed over streams")
      .def_readonly("streams", &Stats::streams, "a list of StreamStat: the streams that ran at least one op")
      .def_readonly("steps_begun", &Stats::steps_begun)
      .def_readonly("peak_inflight_steps", &Stats::peak_inflight_steps,
                    "steps begun but not complete, with or without a cap")
      .def_property_readonly("busy_ns",
                             [](const Stats& s) {
                               std::int64_t t = 0;
                               for (const auto& st : s.streams) t += st.busy_ns;
                               return t;
                             },
                             "time the backend's streams spent running ops, all streams together")
      .def("__str__", &Stats::str)
      .def("__repr__", &Stats::str);

  py::class_<SyncPolicy>(m, "SyncPolicy")
      .def(py::init<>())
      .def_readwrite("max_inflight_steps", &SyncPolicy::max_inflight_steps)
      .def_readwrite("max_queued_ops", &SyncPolicy::max_queued_ops)
      .def_readwrite("max_unlaunched_gpu_ops", &SyncPolicy::max_unlaunched_gpu_ops)
      .def_readwrite("max_queued_bytes", &SyncPolicy::max_queued_bytes)
      .def_readwrite("max_queued_host_bytes", &SyncPolicy::max_queued_host_bytes)
      .def_readwrite("max_streaming_host_bytes", &SyncPolicy::max_streaming_host_bytes)
      .def_readwrite("streaming_op_bytes", &SyncPolicy::streaming_op_bytes)
      .def_readwrite("inline_op_bytes", &SyncPolicy::inline_op_bytes)
      .def_readwrite("low_water", &SyncPolicy::low_water)
      .def_static("unbounded", &SyncPolicy::unbounded)
      .def_static("steps", &SyncPolicy::steps, py::arg("k"))
      .def("__repr__", &SyncPolicy::str);

  py::class_<PyStep>(m, "Step")
      .def("__enter__", [](PyStep& s) -> PyStep& { s.enter(); return s; }, py::return_value_policy::reference)
      .def("__exit__", [](PyStep& s, py::args) { s.exit(); return false; });

  py::class_<RuntimeHandle>(m, "Runtime")
      .def_property_readonly("rank", [](RuntimeHandle) { return runtime().rank(); })
      .def_property_readonly("size", [](RuntimeHandle) { return runtime().size(); })
      .def_property_readonly("local_rank", [](RuntimeHandle) { return runtime().local_rank(); })
      .def_property_readonly("local_size", [](RuntimeHandle) { return runtime().local_size(); })
      .def_property_readonly("device", [](RuntimeHandle) { return runtime().device().str(); })
      .def("step", [](RuntimeHandle) { return PyStep(); }, "a minibatch, for the sync policy: `with rt.step():`")
      .def("set_policy", [](RuntimeHandle, const SyncPolicy& p) { runtime().set_policy(p); }, py::arg("policy"))
      .def_property_readonly("policy", [](RuntimeHandle) { return runtime().engine().policy(); })
      .def("stats", [](RuntimeHandle) { return runtime().stats(); })
      .def("log", [](RuntimeHandle, const std::string& line) { runtime().log(line); }, py::arg("line"),
           "prints on rank 0 only")
      .def("wait_all", [](RuntimeHandle) {
        Runtime& rt = runtime();
        const Loc loc = here();
        py::gil_scoped_release nogil;
        rt.wait_all(loc);
      });

  m.def(
      "init",
      [](std::vector<std::string> argv) {
        auto& slot = runtime_slot();
        if (slot && g_started_on_first_use && argv == std::vector<std::string>{"python"}) return RuntimeHandle{};
        if (slot && g_started_on_first_use)
          throw UsageError("tide.init(): the first op already started the runtime (one per process): call "
                           "tide.init(argv) before any op to pass arguments");
        if (slot) throw UsageError("tide.init(): the runtime is already initialised (one per process)");
        if (g_shut_down) throw UsageError("tide.init(): tide.shutdown() ended the runtime (one per process)");
        std::vector<char*> ptrs;
        for (auto& a : argv) ptrs.push_back(a.data());
        ptrs.push_back(nullptr);
        int argc = static_cast<int>(argv.size());
        slot = Runtime::init(argc, ptrs.data());
        return RuntimeHandle{};
      },
      py::arg("argv") = std::vector<std::string>{"python"},
      "starts the runtime: MPI under a launcher (mpirun, tiderun, srun), a world of one rank otherwise; "
      "without it the first op starts the same runtime");
  m.def("runtime", [] { (void)runtime(); return RuntimeHandle{}; }, "the runtime tide.init() made");
  m.def("initialized", [] { return current_runtime() != nullptr; });
  m.def("python_call_sites", [] { return true; },
        "whether errors, blockers and the trace name Python lines: always, in every build");
  m.def(
      "shutdown",
      [] {
        g_shut_down = true;
        py::gil_scoped_release nogil;
        runtime_slot().reset();
      },
      "finishes queued work and ends the runtime (MPI too); later calls on tensors raise tide.UsageError");
  m.def("wait_all", [] {
    Engine& e = current_engine();
    const Loc loc = here();
    py::gil_scoped_release nogil;
    e.wait_all(loc);
  }, "barrier: waits for everything queued");

  bind_tensors(m);
  bind_tensor_math(m);
  bind_dlpack(m);
  bind_autograd(m);
  bind_comm(m);
  bind_safetensors(m);
}
