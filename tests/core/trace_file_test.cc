// The timeline proves the engine's ordering (every op starts after the end
// of every op it depends on, over random programs on both engines), and
// write_trace turns it into Chrome trace-event JSON that parses.
#include <atomic>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "test_util.h"
#include "trace_order.h"

namespace tide::test {
namespace {

/// A strict JSON syntax check (values, nesting, strings with escapes,
/// numbers): enough to say a trace viewer's parser will not choke.
class JsonSyntax {
 public:
  explicit JsonSyntax(const std::string& s) : s_(s) {}
  bool ok() {
    ws();
    if (!value()) return false;
    ws();
    return i_ == s_.size();
  }

 private:
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool value() {
    ws();
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') return container('}', true);
    if (c == '[') return container(']', false);
    if (c == '"') return string();
    if (s_.compare(i_, 4, "true") == 0 || s_.compare(i_, 4, "null") == 0) return i_ += 4, true;
    if (s_.compare(i_, 5, "false") == 0) return i_ += 5, true;
    return number();
  }
  bool container(char close, bool object) {
    ++i_;
    if (eat(close)) return true;
    do {
      if (object && (!string_at() || !eat(':'))) return false;
      if (!value()) return false;
    } while (eat(','));
    return eat(close);
  }
  bool string_at() {
    ws();
    return i_ < s_.size() && s_[i_] == '"' && string();
  }
  bool string() {
    ++i_;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (static_cast<unsigned char>(s_[i_]) < 0x20) return false;
      if (s_[i_] == '\\') ++i_;
      ++i_;
    }
    return i_++ < s_.size();
  }
  bool number() {
    const std::size_t start = i_;
    if (s_[i_] == '-') ++i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' || s_[i_] == 'e' ||
                              s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-'))
      ++i_;
    return i_ > start && std::isdigit(static_cast<unsigned char>(s_[i_ - 1]));
  }
  const std::string& s_;
  std::size_t i_ = 0;
};

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

class TraceFile : public ::testing::TestWithParam<EngineKind> {};

TEST_P(TraceFile, EveryOpStartsAfterTheEndOfEveryOpItDependsOn) {
  constexpr int kDevices = 3, kStorages = 6, kOps = 300;
  const StreamKind kinds[] = {StreamKind::compute, StreamKind::copy, StreamKind::comm};
  for (std::uint32_t seed = 1; seed <= 8; ++seed) {
    EngineFixture f(GetParam(), kDevices);
    Engine& e = *f;
    std::vector<std::shared_ptr<Storage>> st;
    for (int i = 0; i < kStorages; ++i) st.push_back(buffer(e));
    e.wait_all();
    e.set_tracing(true);
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint32_t>(n)); };
    TraceOrder order(kStorages);
    const std::uint64_t first = e.pushed();
    for (int k = 0; k < kOps; ++k) {
      const int w = pick(kStorages);
      int r = pick(kStorages);
      if (r == w) r = (r + 1) % kStorages;
      const bool reads = pick(3) != 0;
      order.add(e.pushed(), reads ? r : -1, w);
      const int us = pick(4) == 0 ? 30 : 0;
      StorageList rl;
      if (reads) rl.add(st[static_cast<std::size_t>(r)]);
      push(e, "op", cpu(pick(kDevices)), kinds[pick(3)], std::move(rl), {st[static_cast<std::size_t>(w)]},
           [us](const OpContext&) { busy_us(us); });
    }
    e.wait_all();
    std::vector<TraceEvent> trace = e.take_trace();
    for (const auto& ev : trace) EXPECT_GE(ev.push_index, first);
    const int checked = order.check(e, trace, "seed " + std::to_string(seed));
    EXPECT_GT(checked, kOps / 2) << "the programs must have dependencies to check";
  }
}

TEST_P(TraceFile, WritesJsonWithSpansWaitsBlockersAndSteps) {
  EngineFixture f(GetParam(), 2);
  Engine& e = *f;
  auto a = buffer(e), b = buffer(e);
  e.wait_all();
  e.set_tracing(true);
  // The first producer holds until everything is pushed, so no dependency is
  // already met when its consumer is pushed (the engine elides a wait on a
  // stream that has passed the point): each one is a real wait, on any load.
  const bool hold = GetParam() == EngineKind::async;
  std::atomic<bool> pushed{false};
  for (int s = 0; s < 2; ++s) {
    auto step = e.step();
    push(e, "produce \"x\"", cpu(0), StreamKind::compute, {}, {a}, [&pushed, gate = hold && s == 0](const OpContext& c) {
      while (gate && !pushed.load(std::memory_order_acquire)) std::this_thread::yield();
      busy_us(100);
      *c.out<std::int64_t>(0) = 7;
    });
    push(e, "consume", cpu(1), StreamKind::comm, {a}, {b},
         [](const OpContext& c) { *c.out<std::int64_t>(0) = *c.in<std::int64_t>(0) + 1; });
  }
  pushed.store(true, std::memory_order_release);
  const int wait_line = __LINE__ + 1;
  e.wait_all();
  const std::string path = ::testing::TempDir() + "trace_file_test." + std::to_string(::getpid()) + ".json";
  e.write_trace(path, 3, "rank 3");
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  std::remove(path.c_str());
  const std::string j = text.str();

  EXPECT_TRUE(JsonSyntax(j).ok()) << j;
  EXPECT_EQ(count(j, "\"pid\":3"), count(j, "\"pid\":"));
  EXPECT_NE(j.find("\"args\":{\"name\":\"rank 3\"}"), std::string::npos);
  EXPECT_NE(j.find("\"args\":{\"name\":\"frontend\"}"), std::string::npos);
  EXPECT_NE(j.find("\"args\":{\"name\":\"cpu:0/compute\"}"), std::string::npos);
  EXPECT_NE(j.find("\"args\":{\"name\":\"cpu:1/comm\"}"), std::string::npos);
  EXPECT_EQ(count(j, "\"name\":\"produce \\\"x\\\"\""), 2u) << "names are escaped";
  EXPECT_EQ(count(j, "\"cat\":\"op\""), 4u);
  EXPECT_EQ(count(j, "\"cat\":\"step\""), 2u);
  EXPECT_NE(j.find("\"name\":\"wait_all\",\"pid\":3,\"tid\":0"), std::string::npos);
  EXPECT_NE(j.find("\"at\":\"trace_file_test.cc:" + std::to_string(wait_line) + "\""), std::string::npos)
      << "a blocker carries its call site";
  if (GetParam() == EngineKind::async) {
    // Each consumer waited on the other device's stream for its producer
    // (read after write), and the second producer for the first consumer
    // (write after read): three arrows.
    EXPECT_EQ(count(j, "\"ph\":\"s\""), 3u);
    EXPECT_EQ(count(j, "\"ph\":\"f\""), 3u);
  }
  EXPECT_TRUE(e.take_trace().empty());
  EXPECT_TRUE(e.take_frontend_trace().empty());
  EXPECT_THROW(e.write_trace("/nonexistent-dir/trace.json"), Error);
}

INSTANTIATE_TEST_SUITE_P(Engines, TraceFile, ::testing::Values(EngineKind::async, EngineKind::naive),
                         [](const auto& info) { return std::string(engine_kind_name(info.param)); });

}  // namespace
}  // namespace tide::test
