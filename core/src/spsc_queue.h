// SpscQueue: the queue from the frontend thread to one stream's worker.
//
// One producer, one consumer, unbounded: a linked list of fixed-size blocks.
// The producer publishes each item with a release store of its count, the
// consumer reads up to the count it acquired, so every item (and everything
// the frontend wrote before pushing it) is visible to the worker. Plain
// atomics only, so ThreadSanitizer can check it.
//
// A consumer with nothing to do spins briefly, then sleeps on a condition
// variable: an idle worker uses no CPU. A queue may be told to keep polling
// (yielding the core) for a while longer first (set_poll): a GPU stream's
// threads do, so that an op pushed a few microseconds after the last one
// (a synchronous round trip) finds them awake, and for as long as a caller's
// predicate says (a GPU stream's worker while a host thread waits for its
// ops: the ops that follow the wait then find it awake).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TIDE_CPU_RELAX() _mm_pause()
#else
#define TIDE_CPU_RELAX() std::this_thread::yield()
#endif

namespace tide {

template <typename T, std::size_t BlockSize = 512>
class SpscQueue {
  struct Block {
    std::array<T, BlockSize> slots{};
    std::atomic<Block*> next{nullptr};
  };

 public:
  SpscQueue() : tail_block_(new Block), head_block_(tail_block_) {}
  ~SpscQueue() {
    for (Block* b = head_block_; b;) {
      Block* n = b->next.load(std::memory_order_relaxed);
      delete b;
      b = n;
    }
    delete spare_.load(std::memory_order_relaxed);
  }
  SpscQueue(const SpscQueue&) = delete;
  SpscQueue& operator=(const SpscQueue&) = delete;

  /// Producer only.
  void push(T value) {
    put(value);
    publish();
  }

  /// Producer only: stores `value` without handing it over; publish() then
  /// hands over every item put since the last one at once (a run of items
  /// pays one store of the count and one look at the consumer's sleep).
  void put(T value) {
    tail_block_->slots[tail_index_] = value;
    if (++tail_index_ == BlockSize) {
      Block* b = spare_.exchange(nullptr, std::memory_order_acquire);
      if (b) {
        b->next.store(nullptr, std::memory_order_relaxed);
      } else {
        b = new Block;
      }
      tail_block_->next.store(b, std::memory_order_release);
      tail_block_ = b;
      tail_index_ = 0;
    }
    ++produced_;
  }

  /// Producer only: hands over the items put so far.
  void publish() {
    // seq_cst pairs with the consumer's sleeping_ handshake below.
    pushed_.store(produced_, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> lock(mutex_);
      cv_.notify_one();
    }
  }

  /// Whether the consumer sleeps (or has been woken and is not yet running).
  bool consumer_asleep() const { return sleeping_.load(std::memory_order_seq_cst); }

  /// Consumer only: takes the next item if there is one.
  bool try_pop(T& out) {
    if (consumed_ == known_pushed_) {
      known_pushed_ = pushed_.load(std::memory_order_acquire);
      if (consumed_ == known_pushed_) return false;
    }
    if (head_index_ == BlockSize) {
      Block* next = head_block_->next.load(std::memory_order_acquire);
      Block* old = head_block_;
      head_block_ = next;
      head_index_ = 0;
      delete spare_.exchange(old, std::memory_order_acq_rel);
    }
    out = head_block_->slots[head_index_++];
    ++consumed_;
    return true;
  }

  /// Consumer only, before its first pop: after the spin, poll for `d`
  /// more (yielding between looks) before sleeping.
  void set_poll(std::chrono::nanoseconds d) { poll_ = d; }

  /// Consumer only: the next item, waiting for it (spin, then sleep).
  T pop() {
    return pop([] { return false; });
  }

  /// The same, polling on past set_poll's time while `stay_awake()` holds,
  /// and set_poll's time after.
  template <typename StayAwake>
  T pop(StayAwake&& stay_awake) {
    T out{};
    for (;;) {
      if (try_pop(out)) return out;
      for (int i = 0; i < kSpins; ++i) {
        TIDE_CPU_RELAX();
        if (pushed_.load(std::memory_order_relaxed) != consumed_) break;
      }
      if (pushed_.load(std::memory_order_acquire) != consumed_) continue;
      if (poll_.count() > 0 && poll_for_item(stay_awake)) continue;
      sleeping_.store(true, std::memory_order_seq_cst);
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return pushed_.load(std::memory_order_seq_cst) != consumed_; });
      }
      sleeping_.store(false, std::memory_order_relaxed);
    }
  }

 private:
  static constexpr int kSpins = 1024;

  /// Whether an item came within poll_, or while `stay_awake()` held and
  /// poll_ after (the item that follows a host's wait comes just after it).
  template <typename StayAwake>
  bool poll_for_item(StayAwake& stay_awake) {
    auto until = std::chrono::steady_clock::now() + poll_;
    for (;;) {
      std::this_thread::yield();
      if (pushed_.load(std::memory_order_acquire) != consumed_) return true;
      const auto now = std::chrono::steady_clock::now();
      if (stay_awake()) until = now + poll_;
      else if (now >= until) return false;
    }
  }

  // Producer side.
  Block* tail_block_;
  std::size_t tail_index_ = 0;
  std::uint64_t produced_ = 0;
  // Shared.
  alignas(64) std::atomic<std::uint64_t> pushed_{0};
  std::atomic<bool> sleeping_{false};
  std::atomic<Block*> spare_{nullptr};  // one retired block kept for reuse
  std::mutex mutex_;
  std::condition_variable cv_;
  // Consumer side.
  alignas(64) Block* head_block_;
  std::size_t head_index_ = 0;
  std::uint64_t consumed_ = 0;
  std::uint64_t known_pushed_ = 0;
  std::chrono::nanoseconds poll_{0};
};

}  // namespace tide
