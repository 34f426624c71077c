// Value types: devices, shapes, dtypes, the small function.
#include <memory>

#include <tide/core/small_function.h>

#include "test_util.h"

namespace tide::test {
namespace {

TEST(Device, ParsesAndPrints) {
  EXPECT_EQ(Device::parse("cpu"), cpu(0));
  EXPECT_EQ(Device::parse("cpu:3"), cpu(3));
  EXPECT_EQ(Device::parse("cuda:1"), cuda(1));
  EXPECT_EQ(cuda(2).str(), "cuda:2");
  for (const char* bad : {"gpu:0", "cpu:", "cpu:-1", "cpu:1x", "cuda0", ""})
    EXPECT_THROW(Device::parse(bad), DeviceError) << bad;
}

TEST(Shape, CountsAndChecks) {
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_EQ((Shape{2, 3, 4}).numel(), 24);
  EXPECT_EQ((Shape{2, 0}).numel(), 0);
  EXPECT_EQ((Shape{2, 3, 4}).without(1), (Shape{2, 4}));
  EXPECT_EQ((Shape{2, 3}).str(), "[2, 3]");
  EXPECT_THROW((Shape{1, -2}), ShapeError);
  EXPECT_THROW((Shape{1, 1, 1, 1, 1, 1, 1}), ShapeError);
}

TEST(SmallFunction, MovesAndDestroysItsCapture) {
  auto counter = std::make_shared<int>(0);
  {
    SmallFunction<int(int)> f = [c = counter](int x) { return ++*c + x; };
    EXPECT_EQ(counter.use_count(), 2);
    SmallFunction<int(int)> g = std::move(f);
    EXPECT_FALSE(static_cast<bool>(f));
    EXPECT_EQ(g(10), 11);
    EXPECT_EQ(counter.use_count(), 2);
  }
  EXPECT_EQ(counter.use_count(), 1);
}

TEST(Tensor, StorageMustHoldTheShape) {
  EngineFixture e;
  auto s = e->allocate(cpu(0), 8);
  EXPECT_THROW(Tensor(s, Shape{3}, DType::f32), ShapeError);
  EXPECT_NO_THROW(Tensor(s, Shape{2}, DType::f32));
}

}  // namespace
}  // namespace tide::test
