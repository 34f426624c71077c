// The naive engine: runs every op at once on the frontend thread. Same
// interface and error semantics as the async engine; the reference for
// differential tests and a debugging aid (TIDE_ENGINE=naive).
#include <optional>
#include <vector>

#include "engine_backend.h"

#include "backend.h"
#include "stream.h"

namespace tide {

namespace {

class NaiveEngine final : public EngineBackend {
 public:
  explicit NaiveEngine(const EngineOptions& options)
      : EngineBackend(options), seqs_(devices_.size() * kStreamKinds, 0), natives_(seqs_.size(), nullptr) {
    // GPU ops launch on the process's shared naive streams and are waited
    // for one by one: the synchronous reference, with faults pinned on the
    // op that made them. The streams (and the cuBLAS handles the frontend
    // thread binds to them) outlive the engine, so making many naive engines
    // makes no new handles or workspaces.
    gpu_sync_after_op_ = true;
    for (std::size_t i = 0; i < natives_.size(); ++i) {
      const Device d = devices_[i / kStreamKinds];
      if (d.is_cuda()) natives_[i] = backend::shared_stream(d.index, static_cast<StreamKind>(i % kStreamKinds));
    }
  }


  EngineKind kind() const override { return EngineKind::naive; }
  void cancel_pending() override { check_frontend_thread(); drop_errors(); }

 private:
  void submit(OpDesc&& op, int stream_index, std::uint64_t push_index) override {
    auto& c = *counters_;
    c.note_peak(c.peak_queued_ops, 1);
    // The op runs in place; the record carries the rest of it.
    QueuedOp& q = current_;
    q.seq = ++seqs_[static_cast<std::size_t>(stream_index)];
    q.step = current_step();
    q.push_index = push_index;
    void* native = natives_[static_cast<std::size_t>(stream_index)];
    {
      // Runs on the frontend's thread: the op's device only for the op.
      std::optional<backend::DeviceGuard> guard;
      if (native) guard.emplace(op.device.index);
      run_op(op, q, stream_index, native);
    }
    for (int i = 0; i < op.writes.size(); ++i) op.writes[i]->var().written = true;
    completed_.store(completed_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void backend_stats(Stats& out) const override {
    out.ops_completed = completed_.load(std::memory_order_relaxed);
    out.queued_ops = 0;
    out.queued_bytes = 0;
  }
  void wait_storage(const Storage&) override {}
  void wait_everything() override {}


  QueuedOp current_;  // the record of the op being run (its desc unused: the op runs in place)
  std::vector<std::uint64_t> seqs_;
  std::vector<void*> natives_;  // native stream per stream index (null on CPU)
  std::atomic<std::uint64_t> completed_{0};
};

}  // namespace

std::unique_ptr<Engine> make_naive_engine(const EngineOptions& options) {
  return std::make_unique<NaiveEngine>(options);
}

}  // namespace tide
