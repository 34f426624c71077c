#include "test_util.h"

#include <chrono>
#include <thread>

namespace tide::test {

EngineFixture::EngineFixture(EngineKind kind, int devices, SyncPolicy policy, int gpus) {
  EngineOptions o;
  o.kind = kind;
  o.cpu_devices = devices;
  o.cuda_devices = gpus;
  o.policy = policy;
  engine = Engine::create(o);
  scope = std::make_unique<EngineScope>(*engine);
}

std::shared_ptr<Storage> buffer(Engine& e, Device device, std::size_t n) {
  return e.allocate(device, n * sizeof(std::int64_t));
}

void push(Engine& e, const char* name, Device device, StreamKind stream, StorageList reads,
          StorageList writes, std::function<void(const OpContext&)> fn, Loc loc) {
  OpDesc op;
  op.name = name;
  op.device = device;
  op.stream = static_cast<int>(stream);
  op.loc = loc;
  op.reads = std::move(reads);
  op.writes = std::move(writes);
  op.fn = [f = std::make_shared<std::function<void(const OpContext&)>>(std::move(fn))](
              const OpContext& ctx) { (*f)(ctx); };
  e.push(std::move(op));
}

HeldRun push_held_outputs(Engine& e, const std::vector<std::size_t>& sizes, std::uint64_t release_at) {
  std::latch hold(1);
  std::atomic<bool> pushed{false};
  HeldRun run;
  push(e, "held", cpu(0), StreamKind::compute, {}, {}, [&](const OpContext&) { hold.wait(); });
  std::thread releaser([&] {
    for (;;) {
      const bool all = pushed.load();
      run.queued_at_release = e.stats().queued_bytes;
      // A stall lets it go too: a test of a cap waits for the stall it
      // expects, and a test that expects none fails on its assertions
      // instead of waiting for the held op forever.
      if (all || run.queued_at_release >= release_at || e.stats().stalling) break;
      std::this_thread::yield();
    }
    hold.count_down();
  });
  for (std::size_t b : sizes) {
    auto out = e.allocate(cpu(0), b);
    push(e, "alloc", cpu(0), StreamKind::compute, {}, {out}, [](const OpContext&) {});
  }
  pushed = true;
  e.wait_all();
  releaser.join();
  run.stats = e.stats();
  return run;
}

void busy_us(int us) {
  auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

}  // namespace tide::test
