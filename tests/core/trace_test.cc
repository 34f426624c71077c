// The engine's timeline (set_tracing / take_trace) and per-stream busy time.
#include <algorithm>
#include <string>

#include "test_util.h"

namespace tide::test {
namespace {

class Trace : public ::testing::TestWithParam<EngineKind> {};

TEST_P(Trace, RecordsEveryOpInDependencyOrder) {
  EngineFixture f(GetParam());
  Engine& e = *f;
  auto a = buffer(e), b = buffer(e);
  e.set_tracing(true);
  push(e, "produce", cpu(0), StreamKind::compute, {}, {a}, [](const OpContext& c) {
    busy_us(200);
    *c.out<std::int64_t>(0) = 7;
  });
  push(e, "consume", cpu(0), StreamKind::comm, {a}, {b},
       [](const OpContext& c) { *c.out<std::int64_t>(0) = *c.in<std::int64_t>(0) + 1; });
  e.wait_all();
  e.set_tracing(false);
  push(e, "untraced", cpu(0), StreamKind::compute, {}, {a}, [](const OpContext&) {});
  e.wait_all();

  std::vector<TraceEvent> t = e.take_trace();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_STREQ(t[0].op, "produce");
  EXPECT_STREQ(t[1].op, "consume");
  EXPECT_EQ(e.stream_name(t[0].stream), "cpu:0/compute");
  EXPECT_EQ(e.stream_name(t[1].stream), "cpu:0/comm");
  EXPECT_LT(t[0].push_index, t[1].push_index);
  // The consumer ran after its producer finished (read after write).
  EXPECT_GE(t[1].start_ns, t[0].end_ns);
  EXPECT_GE(t[0].end_ns - t[0].start_ns, 150'000);
  EXPECT_TRUE(e.take_trace().empty()) << "take_trace clears what it returned";
  EXPECT_EQ(e.trace_dropped(), 0u);
  EXPECT_EQ(values(b)[0], 8);
}

TEST_P(Trace, StatsCountBusyTimePerStream) {
  EngineFixture f(GetParam());
  Engine& e = *f;
  auto a = buffer(e);
  for (int i = 0; i < 3; ++i)
    push(e, "work", cpu(0), StreamKind::compute, {}, {a}, [](const OpContext&) { busy_us(300); });
  e.wait_all();
  Stats s = e.stats();
  ASSERT_EQ(s.streams.size(), 1u);
  EXPECT_EQ(s.streams[0].name, "cpu:0/compute");
  EXPECT_EQ(s.streams[0].ops, 3u);
  EXPECT_GE(s.streams[0].busy_ns, 3 * 250'000);
  EXPECT_EQ(s.backend_busy_ns, s.streams[0].busy_ns);
  e.reset_stats();
  EXPECT_TRUE(e.stats().streams.empty());
}

INSTANTIATE_TEST_SUITE_P(Engines, Trace, ::testing::Values(EngineKind::async, EngineKind::naive),
                         [](const auto& info) { return std::string(engine_kind_name(info.param)); });

}  // namespace
}  // namespace tide::test
