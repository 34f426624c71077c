#include <tide/comm/communicator.h>

#include <tide/comm/mpi_check.h>
#include <tide/core/engine.h>

#include "comm_impl.h"
#include "host_collective.h"
#include "nccl/device_collectives.h"

namespace tide {

using detail::CollectiveId;
using detail::CollectiveKind;

Communicator::Communicator(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Communicator::~Communicator() {
  if (impl_) release();
}

void Communicator::retire() {
  if (!impl_) return;
  release();
  impl_.reset();
}

const std::shared_ptr<Communicator::Impl>& Communicator::live(const char* name) const {
  if (!impl_)
    throw UsageError(std::string("Communicator::") + name +
                     ": this communicator belonged to a Runtime that has been destroyed");
  return impl_;
}

void Communicator::release() {
  // A group's MPI communicator is freed by an op on the comm stream, after
  // the group's queued collectives and without racing the comm thread's MPI
  // calls. The world's is freed by ~Impl: the Runtime drops it only after
  // the engine has drained. Without an engine no comm thread runs, so ~Impl
  // may free it too.
  Engine* e = current_engine_or_null();
  if (e && !impl_->nccl.empty()) {
    try {
      detail::release_device_comms(impl_, *e);
    } catch (...) {
      // Not the frontend thread, say: the last reference releases them.
    }
  }
  if (!impl_->mpi.active || !impl_->parent || impl_->mpi.comm == MPI_COMM_NULL) return;
  if (!e) return;
  impl_->free_in_destructor = false;  // from here on, left to MPI_Finalize unless the op runs
  try {
    OpDesc op;
    op.name = "comm_free";
    op.device = cpu(0);
    op.stream = static_cast<int>(StreamKind::comm);
    op.fn = [impl = impl_](const OpContext&) {
      if (impl->is_broken()) return;
      impl->checks.finish();  // every member frees the group, so checks in flight complete
      impl->checks.free_comms();
      TIDE_MPI_CHECK(MPI_Comm_free(&impl->mpi.comm));
    };
    e->push(std::move(op));
  } catch (...) {
    // Not the frontend thread, say: the handle is dropped without freeing.
  }
}

std::shared_ptr<Communicator> Communicator::local(const CommOptions& o) {
  auto impl = std::make_shared<Impl>(o);
  return std::shared_ptr<Communicator>(new Communicator(std::move(impl)));
}

std::shared_ptr<Communicator> Communicator::mpi_world(const CommOptions& o) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw UsageError("Communicator::mpi_world needs MPI initialised (use tide::Runtime::init)");
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_SERIALIZED)
    throw UsageError("MPI provides too low a thread level: tide makes MPI calls from its comm thread "
                     "and needs MPI_THREAD_SERIALIZED");
  auto impl = std::make_shared<Impl>(o);
  detail::MpiGroup& mpi = impl->mpi;
  mpi.active = true;
  TIDE_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &mpi.comm));
  // Errors come back as return codes (and break the communicator, naming
  // the collective) instead of ending the job inside MPI with no context.
  // Groups and the desync check's duplicate inherit this.
  TIDE_MPI_CHECK(MPI_Comm_set_errhandler(mpi.comm, MPI_ERRORS_RETURN));
  TIDE_MPI_CHECK(MPI_Comm_rank(mpi.comm, &mpi.rank));
  TIDE_MPI_CHECK(MPI_Comm_size(mpi.comm, &mpi.size));
  mpi.world_rank = mpi.rank;
  mpi.world_ranks.resize(static_cast<std::size_t>(mpi.size));
  for (int r = 0; r < mpi.size; ++r) mpi.world_ranks[static_cast<std::size_t>(r)] = r;
  detail::liveness_init(mpi.comm);
  impl->ready();
  return std::shared_ptr<Communicator>(new Communicator(std::move(impl)));
}

int Communicator::rank() const { return live("rank")->mpi.rank; }
int Communicator::size() const { return live("size")->mpi.size; }
bool Communicator::uses_mpi() const { return live("uses_mpi")->mpi.active; }
bool Communicator::broken() const { return live("broken")->is_broken(); }
std::string Communicator::failure() const { return live("failure")->failure(); }
bool Communicator::nccl_built() { return detail::nccl_built(); }

// ---- Desync check ------------------------------------------------------------

void Communicator::check_sync(Loc loc) {
  live("check_sync");
  if (!impl_->checks.enabled()) return;
  const auto posted = impl_->checks.post(impl_->next_seq, impl_->next_device_seq);
  if (!posted) return;
  detail::push_on_comm_stream(current_engine(), cpu(0), "desync_check", {}, {}, loc,
                              [impl = impl_, index = posted->index, count = posted->count](const OpContext&) {
                                impl->checks.run(index, count);
                              });
}

void Communicator::finish_checks(Loc loc) {
  live("finish_checks");
  if (!impl_->checks.enabled() || !impl_->checks.posted_any()) return;
  detail::push_on_comm_stream(current_engine(), cpu(0), "desync_check_finish", {}, {}, loc,
                              [impl = impl_](const OpContext&) { impl->checks.finish(); });
}

bool Communicator::desync_check() const { return live("desync_check")->checks.enabled(); }

// ---- Sub-groups ------------------------------------------------------------

std::shared_ptr<Communicator> Communicator::split(int color, int key, Loc loc) {
  live("split");
  if (color < 0)
    throw ValueError("split: color " + std::to_string(color) + " must be >= 0 (every rank joins some group)");
  if (!impl_->mpi.active) return local(impl_->options);
  impl_->check_usable();
  Engine& e = current_engine();
  auto group = std::make_shared<Impl>(impl_->options, impl_);
  group->mpi.active = true;
  group->free_in_destructor = false;  // until the split has succeeded
  auto token = e.allocate(cpu(0), 1);
  // MPI_Comm_split blocks until every rank calls it, so a timed, polled
  // rendezvous first checks that they have arrived at this split (as for
  // large collectives).
  detail::push_host_collective(
      impl_, e, "split", impl_->begin(CollectiveKind::split), {}, {token}, loc,
      [group, color, key](const OpContext&, detail::MpiGroup& parent, const CollectiveId& what) {
        parent.arrive(what);
        detail::MpiGroup& mpi = group->mpi;
        if (int rc = MPI_Comm_split(parent.comm, color, key, &mpi.comm); rc != MPI_SUCCESS)
          parent.mpi_failed(rc, "MPI_Comm_split", what);
        parent.rethrow_held();  // a failure found while arriving, once the peers have their split
        TIDE_MPI_CHECK(MPI_Comm_rank(mpi.comm, &mpi.rank));
        TIDE_MPI_CHECK(MPI_Comm_size(mpi.comm, &mpi.size));
        mpi.world_rank = parent.world_rank;
        {
          // Every member agrees on this id: the parent's, the split's place and the color.
          const std::uint64_t words[3] = {parent.ident, what.seq, static_cast<std::uint64_t>(color)};
          mpi.ident = detail::chain_hash(0, detail::CollectiveSig{{words[0], words[1], words[2]}}) | 1;
          MPI_Group mine, parents;
          TIDE_MPI_CHECK(MPI_Comm_group(mpi.comm, &mine));
          TIDE_MPI_CHECK(MPI_Comm_group(parent.comm, &parents));
          std::vector<int> members(static_cast<std::size_t>(mpi.size)), in_parent(members.size());
          for (int r = 0; r < mpi.size; ++r) members[static_cast<std::size_t>(r)] = r;
          TIDE_MPI_CHECK(MPI_Group_translate_ranks(mine, mpi.size, members.data(), parents, in_parent.data()));
          MPI_Group_free(&mine);
          MPI_Group_free(&parents);
          mpi.world_ranks.resize(members.size());
          for (std::size_t r = 0; r < members.size(); ++r)
            mpi.world_ranks[r] = parent.world_ranks[static_cast<std::size_t>(in_parent[r])];
        }
        detail::liveness_leave();
        group->ready();                    // a collective over the group: every member runs it here
        group->free_in_destructor = true;  // ~Communicator hands it to the comm thread
      });
  e.wait_for(*token, "split", loc);
  return std::shared_ptr<Communicator>(new Communicator(std::move(group)));
}

}  // namespace tide
