// DataParallel (<tide/comm/data_parallel.h>): gradient hooks feeding a
// GradientReducer.
#include <tide/comm/data_parallel.h>

#include <string>

#include <tide/core/autograd.h>
#include <tide/ops/autograd.h>

namespace tide {

struct DataParallel::State {
  State(Communicator& comm, std::vector<Tensor> p, ReducerOptions o, Loc loc)
      : params(std::move(p)), reducer(comm, params, o, loc), waiting(params.size()) {}
  std::vector<Tensor> params;
  GradientReducer reducer;
  std::size_t waiting;  // parameters whose gradient this backward has not handed over yet
};

DataParallel::DataParallel(Communicator& comm, std::vector<Tensor> params, ReducerOptions o, bool broadcast,
                           Loc loc) {
  if (params.empty()) throw UsageError("DataParallel: no parameters");
  for (std::size_t i = 0; i < params.size(); ++i) {
    params[i].check_defined("DataParallel");
    // Marking it here would not reach the caller's handles, made before.
    if (!params[i].requires_grad() || !params[i].is_leaf())
      throw UsageError("DataParallel: parameter " + std::to_string(i) +
                       " is not a leaf that requires a gradient (call set_requires_grad() on it first; a "
                       "tide::nn::Module's parameters are)");
  }
  if (broadcast) {
    NoGradGuard no_grad;  // writes the parameters in place
    GradientReducer::broadcast(comm, params, 0, loc);
  }
  state_ = std::make_shared<State>(comm, params, o, loc);
  const std::weak_ptr<State> weak = state_;
  for (std::size_t i = 0; i < params.size(); ++i)
    register_post_accumulate_grad_hook(params[i], [weak, i](const Tensor& g) {
      const std::shared_ptr<State> s = weak.lock();
      if (!s) return;
      s->reducer.push_gradient(static_cast<int>(i), g);
      // Under NoSync the reducer sums the micro-batches itself.
      if (!s->reducer.syncing()) s->params[i].set_grad(Tensor());
      if (--s->waiting > 0) return;
      s->waiting = s->params.size();
      if (s->reducer.syncing())
        for (std::size_t j = 0; j < s->params.size(); ++j) s->params[j].set_grad(s->reducer.reduced(static_cast<int>(j)));
      s->reducer.finish_step();
    });
}

GradientReducer& DataParallel::reducer() { return state_->reducer; }

GradientReducer::NoSync DataParallel::no_sync() { return state_->reducer.no_sync(); }

}  // namespace tide
