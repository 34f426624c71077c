// The engine's timeline, as Engine::take_trace(), read_trace() and
// take_frontend_trace() return it (and write_trace() writes it): what each
// op's run took on its stream, what it waited for on others, and what the
// frontend thread waited for.
#pragma once

#include <cstdint>
#include <vector>

namespace tide {

/// A point on another stream that an op waited for: done once that stream
/// had completed `seq` ops (the producer is that stream's op number `seq`).
struct TraceWait {
  int stream = 0;
  std::uint64_t seq = 0;
};

/// One op's run on the backend, as the engine's timeline records it.
struct TraceEvent {
  const char* op = "";  // the op's name (OpDesc::name)
  int stream = 0;       // stream index: Engine::stream_name(stream) reads "cpu:0/comm"
  std::uint64_t step = 0;
  std::uint64_t push_index = 0;  // the op's place in push order
  // steady_clock, around the kernel only: on a CPU stream the worker's
  // call, on a GPU stream (async engine) the op's work on the device,
  // between timing events recorded around its launch.
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint64_t seq = 0;         // its place on its stream: 1, 2, ...
  const char* file = "";         // the call site that pushed it (OpDesc::loc)
  unsigned line = 0;
  std::vector<TraceWait> waits;  // on other streams (async engine; the naive one runs in push order)
};

/// What the frontend thread waited for while tracing: a blocker
/// (wait_to_read, wait_all, item, ...) with its call site, a stall of the
/// sync policy, or a step's beginning (an instant: start == end).
struct FrontendEvent {
  enum class Kind : std::uint8_t { blocker, stall, step };
  Kind kind = Kind::blocker;
  const char* what = "";  // "wait_all", "stall (steps)", "step"
  const char* file = "";
  unsigned line = 0;
  std::uint64_t step = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

}  // namespace tide
