// Element and byte counts that overflow are refused, naming the shape, and
// an allocation the device cannot hold is an OutOfMemoryError naming the
// bytes, the device and what is held there; neither pushes anything.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

namespace tide::test {
namespace {


constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

void expect_names(const std::string& what, const std::string& part) {
  EXPECT_NE(what.find(part), std::string::npos) << what;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TEST(Sizes, AShapeWhoseExtentsOverflowIsRefusedByName) {
  const std::int64_t big = std::int64_t{1} << 40;
  EXPECT_THROW((Shape{big, big}), ShapeError);
  expect_names(error_of([&] { Shape{big, big}; }), "[1099511627776, 1099511627776]");
  // No elements, but its strides would still overflow.
  EXPECT_THROW((Shape{0, std::int64_t{1} << 62, std::int64_t{1} << 62}), ShapeError);
  const std::vector<std::int64_t> dims{3, kMax / 2};
  EXPECT_THROW(Shape(dims.begin(), dims.end()), ShapeError);
  Shape s{kMax / 2};
  EXPECT_THROW(s.push_back(3), ShapeError);
  expect_names(error_of([&] { Shape{2, -5}; }), "[2, -5]");

  EXPECT_EQ((Shape{0, big}).numel(), 0);
  EXPECT_EQ(Shape{kMax}.numel(), kMax);
  EXPECT_EQ((Shape{std::int64_t{1} << 31, std::int64_t{1} << 31}).numel(), std::int64_t{1} << 62);
}

TEST(Sizes, AByteCountThatOverflowsIsRefusedByName) {
  EngineFixture e;
  const std::int64_t half = std::int64_t{1} << 31;
  EXPECT_EQ(tensor_bytes(Shape{2, 3}, DType::f64), 48u);
  EXPECT_EQ(tensor_bytes(Shape{half, half / 4}, DType::i32), std::size_t{1} << 62);
  EXPECT_THROW(tensor_bytes(Shape{half, half}, DType::f32), ShapeError);
  expect_names(error_of([&] { tensor_bytes(Shape{half, half}, DType::f32); }), "[2147483648, 2147483648] of f32");
  EXPECT_THROW(Tensor::empty({half, half}, DType::f64), ShapeError);
  EXPECT_THROW(Tensor::empty({2}, static_cast<DType>(7)), DTypeError);
  auto storage = e->allocate(cpu(0), 64);
  EXPECT_THROW(Tensor(storage, Shape{half, half}, DType::f32), ShapeError);
  EXPECT_EQ(e->stats().ops_pushed, 0u);
}

TEST(Sizes, CpuMemoryInUseCountsLiveStorages) {
  EngineFixture e(EngineKind::async, 2);
  const std::uint64_t before = cpu_memory_in_use(1);
  {
    Tensor t = Tensor::empty({1000}, DType::f64, cpu(1));
    EXPECT_EQ(cpu_memory_in_use(1), before + 8000);
  }
  EXPECT_EQ(cpu_memory_in_use(1), before);
  EXPECT_THROW(cpu_memory_in_use(-1), DeviceError);
  EXPECT_THROW(cpu_memory_in_use(kMaxCpuDevices), DeviceError);
}

TEST(Sizes, AnImpossibleAllocationIsAnOutOfMemoryError) {
  EngineFixture e;
  Tensor held = Tensor::empty({1000}, DType::f32);
  const std::int64_t side = std::int64_t{1} << 20;  // 4 TiB of f32
  try {
    Tensor::empty({side, side}, DType::f32);
    FAIL() << "no error";
  } catch (const OutOfMemoryError& err) {
    EXPECT_EQ(err.device(), cpu(0));
    EXPECT_EQ(err.requested_bytes(), std::uint64_t{1} << 42);
    EXPECT_GE(err.in_use_bytes(), 4000u);
    EXPECT_EQ(err.in_use_bytes(), cpu_memory_in_use(0));
    const std::string what = err.what();
    expect_names(what, "out of memory on cpu:0");
    expect_names(what, "4398046511104 bytes (4.0 TiB)");
    expect_names(what, "tide's storages hold");
  }
  EXPECT_EQ(e->stats().ops_pushed, 0u);
}

// The allocator's own refusal (not the up-front check): an address-space
// limit makes a block smaller than the machine's memory fail. Sanitizers
// reserve more address space than such a limit allows, so they skip it.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

std::uint64_t address_space_bytes() {
  unsigned long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return static_cast<std::uint64_t>(pages) * 4096;
}

/// Exit status 0 when a 2 GiB allocation under a tight address-space limit
/// is an OutOfMemoryError that says the system refused it.
[[noreturn]] void allocate_under_a_limit() {
  EngineFixture e;
  const std::uint64_t limit = address_space_bytes() + (std::uint64_t{512} << 20);
  const rlimit rl{limit, limit};
  setrlimit(RLIMIT_AS, &rl);
  try {
    Tensor::empty({std::int64_t{1} << 28}, DType::f64);
  } catch (const OutOfMemoryError& err) {
    const bool named = std::string(err.what()).find("the system refused") != std::string::npos;
    std::_Exit(named && e->stats().ops_pushed == 0 ? 0 : 2);
  }
  std::_Exit(1);
}

TEST(SizesDeathTest, AnAllocationTheSystemRefusesIsAnOutOfMemoryError) {
  if (kSanitized) GTEST_SKIP() << "an address-space limit breaks the sanitizers' runtime";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(allocate_under_a_limit(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace tide::test
