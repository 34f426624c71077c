#include "test_util.h"

#include <chrono>

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
          StorageList writes, std::function<void(const OpContext&)> fn, std::source_location loc) {
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

void busy_us(int us) {
  auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

}  // namespace tide::test
