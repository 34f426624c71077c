// DataParallel: torch's DistributedDataParallel for C++ models on autograd.
// It starts every rank from rank 0's parameters (a broadcast), and gives
// each parameter a post-accumulate hook (<tide/ops/autograd.h>) that hands
// its gradient to a GradientReducer the moment backward has summed it, so a
// full bucket's all-reduce starts while the backward of the layers below is
// still being pushed. When the last gradient is in, every parameter's
// grad() is the average over the ranks, and an optimizer step follows as on
// one rank:
//
//   nn::Sequential model(...);
//   DataParallel ddp(comm, model.parameters());
//   backward(nn::cross_entropy(model(x), y));   // grads averaged across ranks
//   opt.step();
//
// Every parameter must receive a gradient in every backward (as torch's
// find_unused_parameters=false): until the last one arrives, the step's
// buckets are not all reduced. Under no_sync(), backward passes sum their
// gradients on this rank, and the next one outside it reduces the sums.
// The hooks hold this object weakly: once it is destroyed they do nothing.
#pragma once

#include <memory>
#include <vector>

#include <tide/comm/reducer.h>

namespace tide {

class DataParallel {
 public:
  /// `params` in forward order: leaves that require a gradient
  /// (tide::UsageError otherwise), of one floating dtype and device. `broadcast` copies rank 0's values
  /// to every rank first. The reducer's construction is a blocking
  /// collective that checks every rank built the same buckets.
  DataParallel(Communicator& comm, std::vector<Tensor> params, ReducerOptions o = {}, bool broadcast = true,
               Loc loc = Loc::current());
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  GradientReducer& reducer();
  /// Backward passes while the guard lives sum their gradients on this rank.
  [[nodiscard]] GradientReducer::NoSync no_sync();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace tide
