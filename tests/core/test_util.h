// Helpers for engine tests: raw ops over int64 buffers, pushed with closures.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <latch>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <tide/core/engine.h>
#include <tide/core/tensor.h>

namespace tide::test {

/// An engine of `kind` with `devices` CPU devices and `gpus` GPUs, made
/// current.
struct EngineFixture {
  explicit EngineFixture(EngineKind kind = EngineKind::async, int devices = 1,
                         SyncPolicy policy = {}, int gpus = 0);
  std::unique_ptr<Engine> engine;
  std::unique_ptr<EngineScope> scope;
  Engine& operator*() { return *engine; }
  Engine* operator->() { return engine.get(); }
};

/// A buffer of `n` int64 values on `device`.
std::shared_ptr<Storage> buffer(Engine& e, Device device = cpu(0), std::size_t n = 1);
inline std::int64_t* values(const std::shared_ptr<Storage>& s) {
  return static_cast<std::int64_t*>(s->data());
}

/// Pushes `fn` on (device, stream kind) with the given read and write sets.
void push(Engine& e, const char* name, Device device, StreamKind stream, StorageList reads,
          StorageList writes, std::function<void(const OpContext&)> fn,
          Loc loc = Loc::current());

/// Burns roughly `us` microseconds of CPU (a stand-in for real work).
void busy_us(int us);

/// On cpu(0)'s compute stream: an op that holds the stream until the engine
/// reports at least `release_at` queued bytes, or the frontend stalls, or
/// every push below is done; then one op per entry of `sizes`, each writing a fresh storage of
/// that many bytes. Returns the engine's stats once all has run, and the
/// queued bytes seen when the held op was let go.
struct HeldRun {
  Stats stats;
  std::uint64_t queued_at_release = 0;
};
HeldRun push_held_outputs(Engine& e, const std::vector<std::size_t>& sizes, std::uint64_t release_at);
/// A `release_at` no queue reaches: the held op goes at a stall, or once all is pushed.
constexpr std::uint64_t kNever = ~std::uint64_t{0};

}  // namespace tide::test
