// Engine::write_trace: the timeline as Chrome trace-event JSON, the format
// Perfetto and chrome://tracing open. One process per engine (a rank), one
// track (thread id) per stream and one for the frontend; "X" spans for ops,
// blockers and stalls, "i" instants for step beginnings, and "s"/"f" flow
// pairs for every cross-stream wait (producer's end to consumer's start).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <utility>

#include <tide/core/engine.h>
#include <tide/core/error.h>

#include "backend.h"

namespace tide {

namespace {

std::string escaped(const char* s) {
  std::string out;
  for (const char* p = s ? s : ""; *p; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string us(std::int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns) / 1e3);
  return buf;
}

std::string site(const char* file, unsigned line) {
  if (!file || !*file) return "";
  std::string f = file;
  if (const auto slash = f.rfind('/'); slash != std::string::npos) f = f.substr(slash + 1);
  return f + ":" + std::to_string(line);
}

constexpr int kFrontendTid = 0;
int tid_of(int stream) { return stream + 1; }

}  // namespace

void Engine::write_trace(const std::string& path, int pid, const std::string& process_name,
                         const std::string& tide_json) {
  check_frontend_thread();
  wait_everything();  // every queued op in the file; errors stay for the next barrier to report
  std::vector<TraceEvent> ops = take_trace();
  std::vector<FrontendEvent> front = take_frontend_trace();
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw Error("write_trace: cannot open " + path + " for writing");

  const std::string p = std::to_string(pid);
  bool first = true;
  auto begin = [&]() -> std::ofstream& {
    out << (first ? "\n" : ",\n");
    first = false;
    return out;
  };
  out << "{\"displayTimeUnit\":\"ns\",";
  if (!tide_json.empty()) out << "\"tide\":" << tide_json << ",";
  // How each traced GPU's clock followed the host's (viewers ignore it).
  std::string clocks;
  for (const Device& d : devices())
    if (backend::ClockReport r; d.is_cuda() && backend::clock_report(d.index, r)) {
      char buf[1024];  // fits the largest values
      std::snprintf(buf, sizeof buf,
                    "%s{\"device\":\"cuda:%d\",\"anchors\":%llu,\"readings_used\":%llu,\"readings_ignored\":%llu,"
                    "\"link_failures\":%llu,\"last_residual_ns\":%.0f,\"max_residual_ns\":%.0f}",
                    clocks.empty() ? "" : ",", d.index, static_cast<unsigned long long>(r.anchors),
                    static_cast<unsigned long long>(r.readings_used), static_cast<unsigned long long>(r.readings_ignored),
                    static_cast<unsigned long long>(r.link_failures), r.last_residual_ns, r.max_residual_ns);
      clocks += buf;
    }
  if (!clocks.empty()) out << "\"tide_gpu_clocks\":[" << clocks << "],";
  out << "\"traceEvents\":[";
  begin() << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << p << ",\"args\":{\"name\":\""
          << escaped(process_name.c_str()) << "\"}}";
  begin() << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << p << ",\"tid\":" << kFrontendTid
          << ",\"args\":{\"name\":\"frontend\"}}";
  std::vector<int> streams;
  for (const auto& e : ops) streams.push_back(e.stream);
  std::sort(streams.begin(), streams.end());
  streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
  for (int s : streams) {
    begin() << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << p << ",\"tid\":" << tid_of(s)
            << ",\"args\":{\"name\":\"" << escaped(stream_name(s).c_str()) << "\"}}";
    begin() << "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" << p << ",\"tid\":" << tid_of(s)
            << ",\"args\":{\"sort_index\":" << tid_of(s) << "}}";
  }

  for (const auto& f : front) {
    const char* cat = f.kind == FrontendEvent::Kind::blocker ? "blocker"
                      : f.kind == FrontendEvent::Kind::stall ? "stall"
                                                              : "step";
    auto& o = begin();
    o << "{\"ph\":\"" << (f.kind == FrontendEvent::Kind::step ? "i\",\"s\":\"p" : "X") << "\",\"cat\":\"" << cat
      << "\",\"name\":\"" << escaped(f.what) << (f.kind == FrontendEvent::Kind::step ? " " + std::to_string(f.step) : "")
      << "\",\"pid\":" << p << ",\"tid\":" << kFrontendTid << ",\"ts\":" << us(f.start_ns);
    if (f.kind != FrontendEvent::Kind::step) o << ",\"dur\":" << us(f.end_ns - f.start_ns);
    o << ",\"args\":{\"step\":" << f.step;
    if (const std::string s = site(f.file, f.line); !s.empty()) o << ",\"at\":\"" << escaped(s.c_str()) << "\"";
    o << "}}";
  }

  // (stream, seq) -> the op, for the arrows of cross-stream waits.
  std::map<std::pair<int, std::uint64_t>, const TraceEvent*> by_point;
  for (const auto& e : ops) by_point[{e.stream, e.seq}] = &e;
  std::uint64_t flow = 0;
  for (const auto& e : ops) {
    begin() << "{\"ph\":\"X\",\"cat\":\"op\",\"name\":\"" << escaped(e.op) << "\",\"pid\":" << p
            << ",\"tid\":" << tid_of(e.stream) << ",\"ts\":" << us(e.start_ns) << ",\"dur\":" << us(e.end_ns - e.start_ns)
            << ",\"args\":{\"seq\":" << e.seq << ",\"push\":" << e.push_index << ",\"step\":" << e.step
            << ",\"at\":\"" << escaped(site(e.file, e.line).c_str()) << "\"}}";
    for (const TraceWait& w : e.waits) {
      const auto it = by_point.find({w.stream, w.seq});
      if (it == by_point.end()) continue;  // its producer ran before tracing began
      const TraceEvent& from = *it->second;
      ++flow;
      begin() << "{\"ph\":\"s\",\"cat\":\"wait\",\"name\":\"wait\",\"id\":" << flow << ",\"pid\":" << p
              << ",\"tid\":" << tid_of(from.stream) << ",\"ts\":" << us(from.end_ns) << "}";
      begin() << "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"wait\",\"name\":\"wait\",\"id\":" << flow << ",\"pid\":" << p
              << ",\"tid\":" << tid_of(e.stream) << ",\"ts\":" << us(std::max(e.start_ns, from.end_ns)) << "}";
    }
  }
  out << "\n]}\n";
  out.flush();
  if (!out) throw Error("write_trace: writing " + path + " failed");
}

}  // namespace tide
