// Runtime: wires a process up (today: the engine from the environment; with
// distribution: MPI, rank and device) and makes its engine the current one.
#pragma once

#include <memory>
#include <source_location>

#include <tide/core/engine.h>

namespace tide {

class Runtime {
 public:
  /// Builds the engine from `options` and makes it current. Not copyable;
  /// one per frontend thread. Destroying it finishes queued work.
  explicit Runtime(const EngineOptions& options = EngineOptions::from_env());
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// The process entry point: reads TIDE_* variables and recognises
  /// --tide-engine=async|naive and --tide-cpu-devices=N on the command line
  /// (removing them from argv).
  static std::unique_ptr<Runtime> init(int& argc, char** argv);

  Engine& engine() { return *engine_; }
  /// A minibatch (see SyncPolicy); blocks at the in-flight-steps gate.
  Step step(std::source_location loc = std::source_location::current()) { return engine_->step(loc); }
  void wait_all(std::source_location loc = std::source_location::current()) { engine_->wait_all(loc); }
  void set_policy(const SyncPolicy& p) { engine_->set_policy(p); }
  Stats stats() const { return engine_->stats(); }

 private:
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<EngineScope> scope_;
};

/// wait_all on the current engine.
void wait_all(std::source_location loc = std::source_location::current());

}  // namespace tide
