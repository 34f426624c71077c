// Printing a tensor (an implicit blocker): floats look like floats, integers
// like integers, long axes are cut to their ends.
#include <sstream>
#include <string>

#include "ops_test_util.h"

namespace tide::testing {
namespace {

using PrintTest = OpsTest;
TIDE_OPS_TEST_SUITE(PrintTest);

std::string printed(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

TEST_P(PrintTest, FloatsLookLikeFloats) {
  EXPECT_EQ(printed(from_vector(std::vector<float>{3, 1.5f, -2, 1e10f}, Shape{2, 2})),
            "tensor([[3., 1.5],\n        [-2., 1e+10]], shape=[2, 2], dtype=f32, device=cpu:0)");
  EXPECT_EQ(printed(full({}, 0.25, {DType::f64})), "tensor(0.25, shape=[], dtype=f64, device=cpu:0)");
  EXPECT_EQ(printed(full({1}, 7, {DType::i32})), "tensor([7], shape=[1], dtype=i32, device=cpu:0)");
  const std::string special = printed(from_vector(std::vector<double>{1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0}));
  EXPECT_NE(special.find("[inf, -inf, "), std::string::npos) << special;
  EXPECT_EQ(special.find("inf."), std::string::npos) << special;
  EXPECT_EQ(printed(arange(0, 10)).substr(0, 36), "tensor([0., 1., 2., ..., 7., 8., 9.]");
}

}  // namespace
}  // namespace tide::testing
