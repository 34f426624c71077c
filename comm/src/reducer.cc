#include <tide/comm/reducer.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include <tide/core/copy.h>
#include <tide/core/engine.h>
#include <tide/ops/creation.h>
#include <tide/ops/elementwise.h>

#include "push_comm.h"

namespace tide {

namespace {

std::string size_str(std::size_t bytes) {
  char buf[32];
  if (bytes >= (1u << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024);
  return buf;
}

/// One run of a memcpy between a gradient and its place in a flat buffer.
struct Slice {
  std::int64_t offset_bytes = 0;
  std::size_t nbytes = 0;
};

/// Pack and unpack run on the comm stream of the gradients' GPU, in order
/// with the NCCL all-reduce between them; host gradients use cpu:0's (the
/// comm thread), like the MPI all-reduce.
template <typename Fn>
void push_bucket_op(Engine& e, Device device, const char* name, StorageList reads, StorageList writes, Loc loc,
                    Fn fn) {
  if (device.is_cuda())
    detail::push_on_comm_stream(e, device, name, std::move(reads), std::move(writes), loc, std::move(fn));
  else
    detail::push_comm(e, name, std::move(reads), std::move(writes), loc, std::move(fn));
}

// Layout fingerprint fields, compared across ranks.
enum Field { kParams, kBuckets, kDType, kHashLo, kHashHi, kCapKiB, kFirstCapKiB, kFields };

/// Every parameter is defined, floating, of one dtype and on one device (a
/// GPU only with NCCL); fills their dtype, device and shapes.
void check_params(const std::vector<Tensor>& params, DType& dtype, Device& device, std::vector<Shape>& shapes) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    p.check_defined("GradientReducer");
    if (!is_floating(p.dtype()))
      throw DTypeError("GradientReducer: parameter " + std::to_string(i) + " is " +
                       dtype_name(p.dtype()) + "; gradients must be floating");
    if (i == 0) {
      dtype = p.dtype();
      device = p.device();
    } else if (p.dtype() != dtype || p.device() != device) {
      throw DTypeError("GradientReducer: parameter " + std::to_string(i) + " is " +
                       dtype_name(p.dtype()) + " on " + p.device().str() + ", parameter 0 is " +
                       dtype_name(dtype) + " on " + device.str() +
                       "; every parameter must share one dtype and device");
    }
    if (device.is_cuda() && !Communicator::nccl_built())
      throw DeviceError("GradientReducer: parameters on " + device.str() +
                        " need NCCL, and this build of tide has none; keep them on a cpu device");
    shapes.push_back(p.shape());
  }
}

/// This rank's bucket layout as kFields numbers: counts, dtype, a hash of
/// every parameter's size and bucket, and the caps.
std::vector<std::int32_t> layout_fingerprint(const std::vector<Shape>& shapes, const std::vector<int>& bucket_of,
                                             std::size_t buckets, DType dtype, double bucket_mb,
                                             double first_bucket_mb) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  auto mix = [&h](std::uint64_t v) {
    for (int k = 0; k < 8; ++k) {
      h ^= (v >> (8 * k)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    mix(static_cast<std::uint64_t>(shapes[i].numel()));
    mix(static_cast<std::uint64_t>(bucket_of[i]));
  }
  std::vector<std::int32_t> mine(kFields);
  mine[kParams] = static_cast<std::int32_t>(shapes.size());
  mine[kBuckets] = static_cast<std::int32_t>(buckets);
  mine[kDType] = static_cast<std::int32_t>(dtype);
  mine[kHashLo] = static_cast<std::int32_t>(h & 0x7fffffff);
  mine[kHashHi] = static_cast<std::int32_t>((h >> 31) & 0x7fffffff);
  mine[kCapKiB] = static_cast<std::int32_t>(std::min(bucket_mb * 1024.0, 2e9));
  mine[kFirstCapKiB] = static_cast<std::int32_t>(std::min(first_bucket_mb * 1024.0, 2e9));
  return mine;
}

/// Compares every rank's fingerprint with rank 0's (an all-gather);
/// throws CommError naming the first rank that differs.
void check_same_layout(Communicator& comm, const std::vector<std::int32_t>& mine, Loc loc) {
  if (comm.size() == 1) return;
  std::vector<std::int32_t> all =
      comm.all_gather(from_vector(mine, Shape{kFields}, cpu(0), loc), loc).to_vector<std::int32_t>(loc);
  for (int r = 1; r < comm.size(); ++r) {
    const std::int32_t* row = all.data() + static_cast<std::ptrdiff_t>(r) * kFields;
    if (std::equal(row, row + kFields, all.data())) continue;
    auto who = [](const std::int32_t* f, int rank) {
      std::ostringstream os;
      os << "rank " << rank << " has " << f[kParams] << " parameters (" << dtype_name(static_cast<DType>(f[kDType]))
         << ") in " << f[kBuckets] << " buckets under a " << f[kCapKiB] / 1024.0 << " MiB cap (the first under "
         << f[kFirstCapKiB] / 1024.0 << " MiB)";
      return os.str();
    };
    throw CommError("GradientReducer: the gradient bucket layout differs across ranks: " +
                    who(all.data(), 0) + ", " + who(row, r) +
                    (row[kParams] == all[kParams] && row[kBuckets] == all[kBuckets]
                         ? " (same counts, different shapes)"
                         : "") +
                    "; every rank must build the same model with the same bucket size");
  }
}

}  // namespace

GradientReducer::GradientReducer(Communicator& comm, const std::vector<Tensor>& params,
                                 ReducerOptions o, Loc loc)
    : comm_(comm), options_(o) {
  if (!(o.bucket_mb > 0))
    throw ValueError("GradientReducer: bucket_mb must be > 0, got " + std::to_string(o.bucket_mb));
  if (!(o.first_bucket_mb >= 0) || !std::isfinite(o.first_bucket_mb))
    throw ValueError("GradientReducer: first_bucket_mb must be >= 0 (0: no cap of its own), got " +
                     std::to_string(o.first_bucket_mb));
  // The first bucket's cap, as used: never above the others'.
  options_.first_bucket_mb = o.first_bucket_mb > 0 ? std::min(o.first_bucket_mb, o.bucket_mb) : o.bucket_mb;
  if (params.empty()) throw ValueError("GradientReducer: no parameters");
  check_params(params, dtype_, device_, shapes_);

  // Buckets from the last parameter back, closed before they would pass
  // their cap: the first bucket's own, then bucket_mb.
  const std::size_t cap = static_cast<std::size_t>(o.bucket_mb * 1024.0 * 1024.0);
  const std::size_t first_cap = static_cast<std::size_t>(options_.first_bucket_mb * 1024.0 * 1024.0);
  const std::size_t elem = dtype_size(dtype_);
  const int n = static_cast<int>(params.size());
  bucket_of_.assign(static_cast<std::size_t>(n), -1);
  offset_.assign(static_cast<std::size_t>(n), 0);
  for (int i = n - 1; i >= 0; --i) {
    const std::size_t bytes = static_cast<std::size_t>(shapes_[static_cast<std::size_t>(i)].numel()) * elem;
    const std::size_t open_cap = buckets_.size() == 1 ? first_cap : cap;
    if (buckets_.empty() || (buckets_.back().bytes > 0 && buckets_.back().bytes + bytes > open_cap))
      buckets_.emplace_back();
    Bucket& b = buckets_.back();
    offset_[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(b.bytes);
    bucket_of_[static_cast<std::size_t>(i)] = static_cast<int>(buckets_.size()) - 1;
    b.params.push_back(i);
    b.bytes += bytes;
  }

  // Buffers for buckets of several gradients; one-gradient buckets reduce in place.
  reduced_.resize(static_cast<std::size_t>(n));
  pending_.resize(static_cast<std::size_t>(n));
  sum_.resize(static_cast<std::size_t>(n));
  for (const Bucket& b : buckets_) {
    if (b.params.size() == 1) {
      flat_.emplace_back();
      continue;
    }
    flat_.push_back(Tensor::empty(Shape{static_cast<std::int64_t>(b.bytes / elem)}, dtype_, device_));
    for (int i : b.params)
      reduced_[static_cast<std::size_t>(i)] = Tensor::empty(shapes_[static_cast<std::size_t>(i)], dtype_, device_);
  }
  arrived_.assign(buckets_.size(), 0);
  pushed_.assign(buckets_.size(), false);

  // Every rank must have built the same layout, or the flat buffers of one
  // all-reduce would pair different gradients across ranks.
  check_same_layout(comm, layout_fingerprint(shapes_, bucket_of_, buckets_.size(), dtype_, o.bucket_mb,
                                                options_.first_bucket_mb),
                    loc);
}

void GradientReducer::broadcast(Communicator& comm, std::vector<Tensor>& tensors, int root, Loc loc) {
  for (Tensor& t : tensors) comm.broadcast_(t, root, loc);
}

void GradientReducer::push_gradient(int i, const Tensor& grad, Loc loc) {
  const int n = static_cast<int>(shapes_.size());
  if (i < 0 || i >= n)
    throw UsageError("GradientReducer: parameter index " + std::to_string(i) + " is not in [0, " +
                     std::to_string(n) + ")");
  const auto ui = static_cast<std::size_t>(i);
  grad.check_defined("push_gradient");
  if (grad.shape() != shapes_[ui])
    throw ShapeError("GradientReducer: gradient of parameter " + std::to_string(i) + " has shape " +
                     grad.shape().str() + ", the parameter has " + shapes_[ui].str());
  if (grad.dtype() != dtype_ || grad.device() != device_)
    throw DTypeError("GradientReducer: gradient of parameter " + std::to_string(i) + " is " +
                     dtype_name(grad.dtype()) + " on " + grad.device().str() + ", expected " +
                     dtype_name(dtype_) + " on " + device_.str());
  if (pending_[ui].defined())
    throw UsageError("GradientReducer: gradient of parameter " + std::to_string(i) +
                     " handed over twice in one step (call finish_step() between steps)");
  if (handed_ == 0) micro_syncs_ = syncing_;
  if (syncing_ != micro_syncs_)
    throw UsageError(std::string("GradientReducer: gradient of parameter ") + std::to_string(i) + " handed over " +
                     (syncing_ ? "after a NoSync guard ended" : "under a NoSync guard made") +
                     " in the middle of a micro-batch; make or end the guard between finish_step() and the "
                     "next micro-batch's first gradient");
  ++handed_;
  Tensor& sum = sum_[ui];
  if (!syncing_) {
    // Accumulate locally: no bucket is reduced in this micro-batch.
    sum = sum.defined() ? add(sum, grad, loc) : grad;
    pending_[ui] = grad;
    return;
  }
  pending_[ui] = sum.defined() ? add(sum, grad, loc) : grad;
  sum = Tensor();
  const int b = bucket_of_[ui];
  if (++arrived_[static_cast<std::size_t>(b)] == static_cast<int>(buckets_[static_cast<std::size_t>(b)].params.size()))
    reduce_bucket(b, loc);
}

void GradientReducer::reduce_bucket(int b, Loc loc) {
  const auto ub = static_cast<std::size_t>(b);
  const Bucket& bucket = buckets_[ub];
  if (comm_.size() == 1) {
    // Every reduction of one rank's values is those values: no packing, no
    // collective, nothing pushed.
    for (int p : bucket.params) reduced_[static_cast<std::size_t>(p)] = pending_[static_cast<std::size_t>(p)];
    pushed_[ub] = true;
    return;
  }
  if (bucket.params.size() == 1) {
    const auto ui = static_cast<std::size_t>(bucket.params[0]);
    reduced_[ui] = pending_[ui];
    comm_.all_reduce_(reduced_[ui], options_.op, loc);
    pushed_[ub] = true;
    return;
  }
  Engine& e = flat_[ub].engine();
  const std::size_t elem = dtype_size(dtype_);
  // Adds the storages of the bucket's gradients [first, last) in `of` to
  // `list`; returns where each lies in the flat buffer.
  auto chunk = [&](std::size_t first, std::size_t last, const std::vector<Tensor>& of, StorageList& list) {
    std::array<Slice, StorageList::kInline> slices{};
    for (std::size_t k = first; k < last; ++k) {
      const auto ui = static_cast<std::size_t>(bucket.params[k]);
      list.add(of[ui].storage());
      slices[k - first] = {offset_[ui], static_cast<std::size_t>(shapes_[ui].numel()) * elem};
    }
    return slices;
  };
  // Pack: the first op takes up to four gradients (StorageList::kInline, the
  // storages an op holds without a heap block); each later op also reads the flat buffer, so that a poisoned
  // gradient in an earlier chunk stays poisoned (a clean write would clear
  // it) and reaches the all-reduce, the unpack and the optimizer.
  const std::size_t np = bucket.params.size();
  for (std::size_t first = 0; first < np;) {
    const bool chained = first > 0;
    const std::size_t last = std::min(np, first + StorageList::kInline - (chained ? 1 : 0));
    StorageList reads;
    const auto slices = chunk(first, last, pending_, reads);
    if (chained) reads.add(flat_[ub].storage());
    push_bucket_op(e, device_, "bucket_pack", std::move(reads), {flat_[ub].storage()}, loc,
                   [slices, count = static_cast<int>(last - first), d = device_](const OpContext& c) {
                     char* flat = static_cast<char*>(c.writes[0]->data());
                     for (int k = 0; k < count; ++k)
                       copy_bytes(c, d, flat + slices[static_cast<std::size_t>(k)].offset_bytes, d,
                                  c.reads[k]->data(), slices[static_cast<std::size_t>(k)].nbytes);
                   });
    first = last;
  }
  comm_.all_reduce_(flat_[ub], options_.op, loc);
  for (std::size_t first = 0; first < np; first += StorageList::kInline) {
    const std::size_t last = std::min(np, first + StorageList::kInline);
    StorageList writes;
    const auto slices = chunk(first, last, reduced_, writes);
    push_bucket_op(e, device_, "bucket_unpack", {flat_[ub].storage()}, std::move(writes), loc,
                   [slices, count = static_cast<int>(last - first), d = device_](const OpContext& c) {
                     const char* flat = static_cast<const char*>(c.reads[0]->data());
                     for (int k = 0; k < count; ++k)
                       copy_bytes(c, d, c.writes[k]->data(), d, flat + slices[static_cast<std::size_t>(k)].offset_bytes,
                                  slices[static_cast<std::size_t>(k)].nbytes);
                   });
  }
  pushed_[ub] = true;
}

const Tensor& GradientReducer::reduced(int i) const {
  if (i < 0 || i >= static_cast<int>(shapes_.size()))
    throw UsageError("GradientReducer: parameter index " + std::to_string(i) + " out of range");
  const auto ui = static_cast<std::size_t>(i);
  if (handed_ > 0 && !micro_syncs_)
    throw UsageError("GradientReducer: parameter " + std::to_string(i) +
                     "'s gradient is being accumulated (a micro-batch under NoSync): it is reduced by the first "
                     "micro-batch outside the guard");
  if (!pushed_[static_cast<std::size_t>(bucket_of_[ui])])
    throw UsageError("GradientReducer: the bucket of parameter " + std::to_string(i) +
                     " has not been reduced this step (not all of its gradients were handed over)");
  return reduced_[ui];
}

void GradientReducer::finish_step() {
  std::string missing;
  for (std::size_t i = 0; i < pending_.size(); ++i)
    if (!pending_[i].defined()) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  for (auto& p : pending_) p = Tensor();
  std::fill(arrived_.begin(), arrived_.end(), 0);
  std::fill(pushed_.begin(), pushed_.end(), false);
  const bool accumulating = handed_ > 0 && !micro_syncs_;
  handed_ = 0;
  accumulated_ = accumulating ? accumulated_ + 1 : 0;
  if (!missing.empty()) {
    // A sum short of a micro-batch would be reduced later as if whole: drop them all.
    const bool dropped = accumulated_ > 0 || std::any_of(sum_.begin(), sum_.end(), [](const Tensor& t) { return t.defined(); });
    for (auto& t : sum_) t = Tensor();
    accumulated_ = 0;
    throw UsageError("GradientReducer: step ended without the gradients of parameters " + missing +
                     (accumulating ? "; the micro-batch was not accumulated"
                                   : "; their buckets were not reduced") +
                     (dropped ? " (the gradients accumulated so far are dropped)" : ""));
  }
}

std::string GradientReducer::describe() const {
  std::ostringstream os;
  os << buckets_.size() << (buckets_.size() == 1 ? " bucket:" : " buckets:");
  for (const Bucket& b : buckets_)
    os << " [" << b.params.size() << (b.params.size() == 1 ? " param, " : " params, ") << size_str(b.bytes) << "]";
  return os.str();
}

}  // namespace tide
