// GradientReducer: the data-parallel part of a training step. Gradients are
// grouped in buckets under a size cap; the moment backward has produced every
// gradient of a bucket, the bucket's all-reduce is pushed on the comm stream,
// so it runs while the rest of backward still computes. The optimizer step of
// a parameter then waits only for its own bucket (by ordinary dependency
// tracking on the reduced gradient).
//
// Buckets are formed from the last parameter back, the order in which
// backward produces gradients. The first bucket has a small cap of its own
// (1 MiB by default, as in PyTorch DDP): its gradients are the first ready,
// and a small bucket starts reducing early, under most of backward, where a
// big one would wait for gradients from deep in the model. A bucket of one gradient is reduced in place;
// a bucket of several is packed into one flat buffer, reduced, and unpacked
// into per-parameter tensors; pack, all-reduce and unpack all run on the comm
// stream, so the compute stream never waits for communication. Host
// parameters use cpu:0's comm stream and MPI; parameters on a GPU use that
// GPU's comm stream and NCCL (pack and unpack are device-to-device copies).
//
// Gradient accumulation: a step of K micro-batches hands over every
// gradient K times. Under a NoSync guard (reducer.no_sync(), for the first
// K - 1 micro-batches) the reducer adds each gradient to a local sum and
// pushes no collective; the next micro-batch outside the guard adds its
// own gradient and reduces the sums, bucket by bucket as always. The
// reducer sums: for the gradient of the mean loss over the K micro-batches
// (what one batch K times larger gives), scale each micro-batch's loss, or
// the gradient that starts its backward, by 1/K.
//
// Thread safety: like every op, call from the engine's frontend thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <tide/comm/communicator.h>

namespace tide {

struct ReducerOptions {
  /// Largest bucket in MiB; a gradient larger than this has a bucket of its
  /// own. Must be > 0.
  double bucket_mb = 25.0;
  /// How gradients combine across ranks: avg gives the gradient of the mean
  /// loss over the global batch when every rank's loss is a mean over an
  /// equal share of it.
  ReduceOp op = ReduceOp::avg;
  /// Cap of the first bucket in MiB (the last parameters', the first
  /// gradients backward produces); it is never larger than bucket_mb.
  /// 0: no cap of its own, every bucket under bucket_mb. Must be >= 0.
  double first_bucket_mb = 1.0;
};

class GradientReducer {
 public:
  struct Bucket {
    std::vector<int> params;  // parameter indices, in the order gradients arrive
    std::size_t bytes = 0;
  };

  /// `params` in forward order (only shapes, dtypes and devices are used;
  /// every parameter must be floating and of one dtype). Checks that every
  /// rank built the same bucket layout: a blocking collective at
  /// construction, which throws tide::CommError naming the first rank that
  /// differs.
  GradientReducer(Communicator& comm, const std::vector<Tensor>& params, ReducerOptions o = {},
                  Loc loc = Loc::current());

  /// Pushes a broadcast of every tensor from `root`, in place: every rank
  /// then starts from root's parameters (or optimizer state).
  static void broadcast(Communicator& comm, std::vector<Tensor>& tensors, int root = 0,
                        Loc loc = Loc::current());

  /// While one lives, the reducer accumulates: push_gradient adds each
  /// gradient to the parameter's local sum (an add op, from the second
  /// micro-batch on) and pushes no collective. Make one
  /// before a micro-batch's first push_gradient and let it go after
  /// finish_step(); guards nest. Not thread-safe (like the reducer).
  class NoSync {
   public:
    explicit NoSync(GradientReducer& r) : reducer_(r), was_syncing_(r.syncing_) { r.syncing_ = false; }
    ~NoSync() { reducer_.syncing_ = was_syncing_; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    GradientReducer& reducer_;
    bool was_syncing_;
  };
  /// A NoSync guard for this reducer (PyTorch DDP's no_sync()).
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }
  /// False while a NoSync guard lives.
  bool syncing() const { return syncing_; }

  /// Hands over parameter `i`'s gradient for this micro-batch. Outside a
  /// NoSync guard, the sum of it and the gradients accumulated under one
  /// is what gets reduced: when it completes a bucket, that bucket's
  /// reduction is pushed at once. Throws tide::UsageError when `i` was
  /// already handed over this micro-batch, or when a NoSync guard began or
  /// ended after the micro-batch's first gradient; tide::ShapeError /
  /// DTypeError when `grad` does not match the parameter. The reducer keeps
  /// `grad` (it may reduce it in place): do not write to it afterwards.
  void push_gradient(int i, const Tensor& grad, Loc loc = Loc::current());

  /// The reduced gradient of parameter `i` (its values arrive when its
  /// bucket's reduction has run). Throws tide::UsageError before its bucket
  /// has been pushed this step, and during a micro-batch under NoSync.
  const Tensor& reduced(int i) const;

  /// Ends the micro-batch (a step, without accumulation); throws
  /// tide::UsageError naming the parameters whose gradients never arrived
  /// (their buckets were not reduced). After that error the reducer starts
  /// afresh: the sums accumulated so far are dropped too.
  void finish_step();

  /// Micro-batches accumulated under NoSync since the last reduction.
  int accumulated() const { return accumulated_; }

  const std::vector<Bucket>& buckets() const { return buckets_; }
  /// "3 buckets: [4 params, 41.0 KiB] [1 param, 4.0 MiB] ...", the first
  /// bucket first.
  std::string describe() const;

 private:
  void reduce_bucket(int b, Loc loc);

  Communicator& comm_;
  ReducerOptions options_;
  std::vector<Shape> shapes_;
  DType dtype_ = DType::f32;
  Device device_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_;        // per parameter
  std::vector<std::int64_t> offset_;  // per parameter: its place in its bucket's flat buffer
  std::vector<Tensor> flat_;          // per bucket of several gradients
  std::vector<Tensor> pending_;       // gradients handed over this step
  std::vector<Tensor> reduced_;       // per parameter
  std::vector<int> arrived_;          // per bucket, this step
  std::vector<bool> pushed_;          // per bucket, this step
  std::vector<Tensor> sum_;           // per parameter: its gradients accumulated under NoSync
  bool syncing_ = true;               // no NoSync guard lives
  int handed_ = 0;                    // gradients handed over this micro-batch
  bool micro_syncs_ = true;           // whether this micro-batch reduces (fixed by its first gradient)
  int accumulated_ = 0;
};

}  // namespace tide
