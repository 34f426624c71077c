#include <tide/launch/runtime.h>

#include <cstring>
#include <string>

namespace tide {

Runtime::Runtime(const EngineOptions& options)
    : engine_(Engine::create(options)), scope_(std::make_unique<EngineScope>(*engine_)) {}

Runtime::~Runtime() {
  scope_.reset();
  engine_.reset();  // drains queued work, then joins the workers
}

std::unique_ptr<Runtime> Runtime::init(int& argc, char** argv) {
  EngineOptions o = EngineOptions::from_env();
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--tide-engine=", 0) == 0) {
      std::string v = a.substr(14);
      if (v == "async") o.kind = EngineKind::async;
      else if (v == "naive") o.kind = EngineKind::naive;
      else throw ValueError(a + ": expected async or naive");
    } else if (a.rfind("--tide-cpu-devices=", 0) == 0) {
      try {
        o.cpu_devices = std::stoi(a.substr(19));
      } catch (const std::exception&) {
        throw ValueError(a + ": expected an integer");
      }
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  argv[argc] = nullptr;
  return std::make_unique<Runtime>(o);
}

void wait_all(std::source_location loc) { current_engine().wait_all(loc); }

}  // namespace tide
