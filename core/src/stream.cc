#include "stream.h"

namespace tide {

Stream::Stream(Hooks& hooks, int index) : hooks_(hooks), index_(index), thread_([this] { worker(); }) {}

Stream::~Stream() {
  if (thread_.joinable()) {
    stop();
    join();
  }
  reclaim();
  for (QueuedOp* op : free_) delete op;
}

void Stream::stop() { queue_.push(nullptr); }  // a sentinel: everything before it runs first

void Stream::join() { thread_.join(); }

QueuedOp* Stream::acquire_op() {
  reclaim();
  if (free_.empty()) return new QueuedOp;
  QueuedOp* op = free_.back();
  free_.pop_back();
  return op;
}

void Stream::reclaim() {
  QueuedOp* op = nullptr;
  while (finished_.try_pop(op)) {
    op->clear();  // drops its storages: memory is freed here, on the frontend
    if (free_.size() < kMaxFree) {
      free_.push_back(op);
    } else {
      delete op;
    }
  }
}

void Stream::enqueue(QueuedOp* op) {
  if (op->bytes) pushed_bytes_.store(pushed_bytes() + op->bytes, std::memory_order_relaxed);
  queue_.push(op);
}

void Stream::wait_until(std::uint64_t seq) {
  if (reached(seq)) return;
  // A short spin catches ops that are about to finish without a sleep and a
  // wake-up (tens of microseconds); past it the waiter sleeps, so a long wait
  // costs no CPU.
  for (int i = 0; i < 256; ++i) {
    TIDE_CPU_RELAX();
    if (reached(seq)) return;
  }
  waiters_.fetch_add(1, std::memory_order_seq_cst);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return completed_.load(std::memory_order_seq_cst) >= seq; });
  }
  waiters_.fetch_sub(1, std::memory_order_relaxed);
}

void Stream::complete(std::uint64_t seq) {
  // seq_cst on both sides: a waiter either sees the new count before it
  // sleeps, or is counted in waiters_ here and gets the notify.
  completed_.store(seq, std::memory_order_seq_cst);
  if (waiters_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    cv_.notify_all();
  }
}

void Stream::worker() {
  for (;;) {
    QueuedOp* op = queue_.pop();  // spins briefly, then sleeps
    if (!op) return;
    for (int i = 0; i < op->nwaits; ++i) op->waits[i].stream->wait_until(op->waits[i].seq);
    hooks_.run(*op, index_);
    const std::uint64_t seq = op->seq;
    if (op->bytes)
      completed_bytes_.store(completed_bytes_.load(std::memory_order_relaxed) + op->bytes,
                             std::memory_order_seq_cst);
    finished_.push(op);  // the op is the frontend's again from here
    complete(seq);
    hooks_.completed();
  }
}

}  // namespace tide
