// Misuse of the engine throws a tide::Error on the frontend and enqueues
// nothing.
#include <atomic>
#include <cstdlib>
#include <latch>
#include <thread>

#include <tide/ops/elementwise.h>

#include "test_util.h"

namespace tide::test {
namespace {

void noop(const OpContext&) {}

TEST(BadInput, UnknownDeviceThrowsBeforeEnqueue) {
  EngineFixture e(EngineKind::async, 2);
  EXPECT_THROW(push(*e, "op", cpu(2), StreamKind::compute, {}, {}, noop), DeviceError);
  EXPECT_THROW(push(*e, "op", cuda(0), StreamKind::compute, {}, {}, noop), DeviceError);
  EXPECT_THROW(e->allocate(cpu(7), 8), DeviceError);
  EXPECT_EQ(e->stats().ops_pushed, 0u);
}

TEST(BadInput, StoragesOfAnotherEngineAreRejected) {
  EngineFixture a, b;
  auto foreign = buffer(*b);
  EXPECT_THROW(push(*a, "op", cpu(0), StreamKind::compute, {foreign}, {}, noop), UsageError);
  EXPECT_THROW(push(*a, "op", cpu(0), StreamKind::compute, {}, {foreign}, noop), UsageError);
  EXPECT_THROW(a->wait_for(*foreign), UsageError);
  EXPECT_EQ(a->stats().ops_pushed, 0u);
}

TEST(BadInput, AnOpWithoutAKernelIsRejected) {
  EngineFixture e;
  OpDesc op;
  op.device = cpu(0);
  EXPECT_THROW(e->push(std::move(op)), UsageError);
  EXPECT_EQ(e->stats().ops_pushed, 0u);
}

TEST(BadInput, TooManyStoragesInOneSet) {
  EngineFixture e;
  StorageList l;
  for (int i = 0; i < StorageList::kCapacity; ++i) l.add(buffer(*e));
  EXPECT_THROW(l.add(buffer(*e)), UsageError);
}

TEST(BadInput, UndefinedTensors) {
  EngineFixture e;
  Tensor t;
  EXPECT_THROW(t.wait_to_read(), UndefinedTensorError);
  EXPECT_THROW(t.item<float>(), UndefinedTensorError);
  EXPECT_THROW(t.to_vector<float>(), UndefinedTensorError);
  EXPECT_THROW(t.device(), UndefinedTensorError);
  EXPECT_THROW(add(t, t), UndefinedTensorError);
  EXPECT_EQ(e->stats().ops_pushed, 0u);
}

TEST(BadInput, NoCurrentEngine) {
  ASSERT_EQ(current_engine_or_null(), nullptr);
  EXPECT_THROW(current_engine(), UsageError);
  EXPECT_THROW(Tensor::empty({2}, DType::f32), UsageError);
}

// The fallback asked when no engine is active (the Python module's first
// use): its engine is the current one; one that makes none leaves the
// error; one that asks for the engine itself is not re-entered.
namespace fallback_test {
std::unique_ptr<EngineFixture> made;
int calls = 0;
Engine* make_one() {
  ++calls;
  made = std::make_unique<EngineFixture>();
  return made->engine.get();
}
Engine* make_none() {
  ++calls;
  return nullptr;
}
Engine* ask_again() {
  ++calls;
  return &current_engine();  // no engine: throws, without a second call here
}
}  // namespace fallback_test

TEST(BadInput, TheEngineFallbackIsAskedWhenNoEngineIsActive) {
  namespace ft = fallback_test;
  ASSERT_EQ(current_engine_or_null(), nullptr);
  set_engine_fallback(&ft::make_none);
  EXPECT_THROW(current_engine(), UsageError);
  EXPECT_EQ(ft::calls, 1);
  set_engine_fallback(&ft::ask_again);
  EXPECT_THROW(current_engine(), UsageError);
  EXPECT_EQ(ft::calls, 2) << "not re-entered";
  set_engine_fallback(&ft::make_one);
  EXPECT_EQ(Tensor::empty({2}, DType::f32).to_vector<float>().size(), 2u);
  EXPECT_EQ(ft::calls, 3);
  EXPECT_EQ(&current_engine(), ft::made->engine.get());
  EXPECT_EQ(ft::calls, 3) << "asked only while no engine is active";
  set_engine_fallback(nullptr);
  ft::made.reset();
  EXPECT_THROW(current_engine(), UsageError);
}

TEST(BadInput, TensorOfADestroyedEngine) {
  Tensor t;
  {
    EngineFixture e;
    t = Tensor::empty({2}, DType::f32);
  }
  EngineFixture other;
  EXPECT_THROW(t.wait_to_read(), UsageError);
  EXPECT_THROW(add(t, 1.0), UsageError);
  EXPECT_EQ(other->stats().ops_pushed, 0u);
}

TEST(BadInput, ASecondFrontendThreadIsRejected) {
  EngineFixture e;
  push(*e, "op", cpu(0), StreamKind::compute, {}, {}, noop);
  bool threw = false;
  std::thread other([&] {
    try {
      push(*e, "op", cpu(0), StreamKind::compute, {}, {}, noop);
    } catch (const UsageError&) {
      threw = true;
    }
  });
  other.join();
  EXPECT_TRUE(threw);
  EXPECT_EQ(e->stats().ops_pushed, 1u);
}

// Two threads whose first pushes meet: one becomes the frontend, the other
// is refused (and ThreadSanitizer sees no race on the claim).
TEST(BadInput, TwoThreadsPushingFirstAtOnce) {
  for (int round = 0; round < 50; ++round) {
    EngineFixture e;
    std::atomic<int> refused{0};
    std::latch start(2);
    auto first_push = [&] {
      start.arrive_and_wait();
      try {
        push(*e, "op", cpu(0), StreamKind::compute, {}, {}, noop);
      } catch (const UsageError&) {
        refused.fetch_add(1);
      }
    };
    std::thread a(first_push), b(first_push);
    a.join();
    b.join();
    EXPECT_EQ(refused.load(), 1);
    EXPECT_EQ(e->stats().ops_pushed, 1u);
  }
}

TEST(BadInput, EnvironmentValuesAreChecked) {
  ::setenv("TIDE_CPU_DEVICES", "0", 1);
  EXPECT_THROW(EngineOptions::from_env(), ValueError);
  ::setenv("TIDE_CPU_DEVICES", "3x", 1);
  EXPECT_THROW(EngineOptions::from_env(), ValueError);
  ::setenv("TIDE_CPU_DEVICES", "3", 1);
  EXPECT_EQ(EngineOptions::from_env().cpu_devices, 3);
  ::unsetenv("TIDE_CPU_DEVICES");
  ::setenv("TIDE_ENGINE", "turbo", 1);
  EXPECT_THROW(EngineOptions::from_env(), ValueError);
  ::setenv("TIDE_ENGINE", "naive", 1);
  EXPECT_EQ(EngineOptions::from_env().kind, EngineKind::naive);
  ::unsetenv("TIDE_ENGINE");
}

}  // namespace
}  // namespace tide::test
