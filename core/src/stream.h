// Stream: one ordered queue of ops with one backend worker thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include <tide/core/engine.h>

#include "spsc_queue.h"

namespace tide {

/// An op waiting in a stream's queue, with the events it must wait for.
struct QueuedOp {
  static constexpr int kMaxWaits = 16;
  OpDesc desc;
  std::uint64_t seq = 0;
  std::uint64_t step = 0;
  std::uint64_t push_index = 0;
  std::uint64_t bytes = 0;  // memory it allocates; counted as queued until it completes
  StreamPoint waits[kMaxWaits]{};
  int nwaits = 0;
};

class Stream {
 public:
  /// `run` executes one op on the worker; `done` is called after it
  /// completed and released its storages.
  struct Hooks {
    virtual void run(QueuedOp& op, int stream_index) = 0;
    virtual void done(std::uint64_t bytes) = 0;
    virtual ~Hooks() = default;
  };

  Stream(Hooks& hooks, int index);
  ~Stream();  // finishes queued ops, then joins the worker
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int index() const { return index_; }

  // Frontend thread only.
  std::uint64_t next_seq() { return ++pushed_; }
  std::uint64_t pushed() const { return pushed_; }
  void enqueue(QueuedOp* op);

  // Any thread.
  std::uint64_t completed() const { return completed_.load(std::memory_order_acquire); }
  bool reached(std::uint64_t seq) const { return completed() >= seq; }
  /// Blocks until `seq` ops have completed: a short spin, then sleep.
  void wait_until(std::uint64_t seq);

 private:
  void worker();
  void complete(std::uint64_t seq);

  Hooks& hooks_;
  int index_;
  std::uint64_t pushed_ = 0;
  std::atomic<std::uint64_t> completed_{0};
  std::atomic<int> waiters_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
  SpscQueue<QueuedOp*> queue_;
  std::thread thread_;
};

}  // namespace tide
