// GradientReducer: the data-parallel part of a training step. Gradients are
// grouped in buckets under a size cap; the moment backward has produced every
// gradient of a bucket, the bucket's all-reduce is pushed on the comm stream,
// so it runs while the rest of backward still computes. The optimizer step of
// a parameter then waits only for its own bucket (by ordinary dependency
// tracking on the reduced gradient).
//
// Buckets are formed from the last parameter back, the order in which
// backward produces gradients. A bucket of one gradient is reduced in place;
// a bucket of several is packed into one flat buffer, reduced, and unpacked
// into per-parameter tensors; pack, all-reduce and unpack all run on the comm
// stream, so the compute stream never waits for communication. Host
// parameters use cpu:0's comm stream and MPI; parameters on a GPU use that
// GPU's comm stream and NCCL (pack and unpack are device-to-device copies).
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

  /// Hands over parameter `i`'s gradient for this step. When it completes a
  /// bucket, that bucket's reduction is pushed at once. Throws
  /// tide::UsageError when `i` was already handed over this step, or
  /// tide::ShapeError / DTypeError when `grad` does not match the parameter.
  void push_gradient(int i, const Tensor& grad, Loc loc = Loc::current());

  /// The reduced gradient of parameter `i` (its values arrive when its
  /// bucket's reduction has run). Throws tide::UsageError before its bucket
  /// has been pushed this step.
  const Tensor& reduced(int i) const;

  /// Ends the step; throws tide::UsageError naming the parameters whose
  /// gradients never arrived (their buckets were not reduced).
  void finish_step();

  const std::vector<Bucket>& buckets() const { return buckets_; }
  /// "3 buckets: [4 params, 41.0 KiB] [1 param, 4.0 MiB] ..."
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
};

}  // namespace tide
