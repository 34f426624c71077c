// Call sites in stats and errors name the user's code: printing a tensor is
// counted at the line that prints, and an op pushed without a location says
// so instead of naming a line inside tide.
#include <sstream>
#include <string>

#include "test_util.h"

namespace tide::test {
namespace {

TEST(CallSite, PrintingIsCountedAtTheCallersLine) {
  EngineFixture e;
  Tensor t = Tensor::empty({2}, DType::i32);
  std::ostringstream os;
  const int line = __LINE__ + 1;
  os << "t = " << t << "\n";
  EXPECT_NE(os.str().find("shape=[2], dtype=i32, device=cpu:0"), std::string::npos) << os.str();
  const Stats s = e->stats();
  ASSERT_EQ(s.blocker_sites.size(), 1u);
  EXPECT_EQ(s.blocker_sites[0].kind, "print");
  const std::string& site = s.blocker_sites[0].call_site;
  EXPECT_NE(site.find("call_site_test.cc:" + std::to_string(line)), std::string::npos) << site;
}

TEST(CallSite, AnOpWithoutALocationHasAnUnknownCallSite) {
  EngineFixture e;
  OpDesc op;
  op.name = "fails";
  op.device = cpu(0);
  op.fn = [](const OpContext&) { throw std::runtime_error("boom"); };
  e->push(std::move(op));
  try {
    e->wait_all();
    FAIL() << "no error";
  } catch (const BackendError& err) {
    EXPECT_EQ(err.provenance().call_site, "unknown call site");
  }
  EXPECT_EQ(format_call_site(Loc{}), "unknown call site");
}

}  // namespace
}  // namespace tide::test
