// Runtime: wires one process (one rank) up. Under mpirun it initialises MPI,
// finds this rank's place (world rank, node-local rank), builds the engine
// and the world communicator, and makes the engine current. Started without
// mpirun it is a world of one rank that needs no MPI at all.
//
// Shutdown order: a last desync check is pushed and the checks in flight
// are finished, queued work drains, the communicator goes, then MPI_Finalize. If a collective failed
// (the communicator is broken, before or after draining) or the runtime is
// destroyed while an exception unwinds, it prints why and calls MPI_Abort
// instead, so the other ranks end too rather than wait for a collective
// this rank will never join. Under MPI it also installs a std::terminate
// handler that does the same for an exception escaping main (which, uncaught,
// would not unwind to this destructor).
#pragma once

#include <exception>
#include <iosfwd>
#include <memory>
#include <tide/core/loc.h>
#include <string>

#include <tide/comm/communicator.h>
#include <tide/launch/gpu_sharing.h>
#include <tide/core/engine.h>

namespace tide {

struct RuntimeOptions {
  EngineOptions engine = EngineOptions::from_env();
  CommOptions comm = CommOptions::from_env();
  /// Print from every rank (prefixed "[rank r]"), not only rank 0.
  /// TIDE_LOG_ALL_RANKS=1 sets it.
  bool log_all_ranks = false;
  /// Let ranks of a node share a GPU when there are more ranks than GPUs
  /// (the default; TIDE_SHARE_GPUS=0 turns it off, and init then refuses
  /// such a job with a clear error). Ranks that share a GPU still run NCCL
  /// collectives: init gives each its own NCCL host identity (see
  /// GpuSharing), so NCCL joins them through its network transport. A GPU
  /// whose compute mode admits one process is never shared.
  bool share_gpus = true;
  /// Record the timeline and write it, when the Runtime ends, to
  /// `<trace_dir>/trace.rank<R>.json` (Chrome trace-event JSON; see
  /// Engine::write_trace). TIDE_TRACE=DIR or --tide-trace=DIR sets it; the
  /// directory is created, and checked writable, at start. Every rank must
  /// trace or none: under MPI, each rank measures its clock against rank
  /// 0's at start and at the end (Communicator::clock_offset, a collective)
  /// and the file carries both samples under "tide", for launch/tide-trace
  /// to merge the ranks' files onto one clock. The file is first written at
  /// start, holding the start sample and no events: a rank that never
  /// reaches its end leaves that.
  std::string trace_dir;
  static RuntimeOptions from_env();
};

class Runtime {
 public:
  /// Without MPI: a one-rank world. Makes the engine current.
  explicit Runtime(const RuntimeOptions& options = RuntimeOptions::from_env());
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// The process entry point. Under a launcher (mpirun, srun: detected from
  /// its environment variables) it calls MPI_Init_thread asking for
  /// MPI_THREAD_SERIALIZED and checks what it got. Reads TIDE_* variables and
  /// takes --tide-engine=async|naive and --tide-cpu-devices=N off argv.
  /// Throws UsageError, naming what it found and how to launch, when a
  /// launcher started several processes without MPI (Slurm's
  /// SLURM_STEP_NUM_TASKS or SLURM_NTASKS > 1 with SLURM_PROCID, as srun
  /// without --mpi=pmix leaves them; torchrun's WORLD_SIZE > 1 with RANK):
  /// each would otherwise run alone as a world of one rank.
  static std::unique_ptr<Runtime> init(int& argc, char** argv);

  Engine& engine() { return *engine_; }
  /// The world communicator. The reference stays valid after the Runtime
  /// is destroyed; every call through it then throws tide::UsageError.
  Communicator& world() { return *world_; }
  int rank() const { return world_->rank(); }
  int size() const { return world_->size(); }
  /// This rank's index among the ranks of its node, and their number.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  /// This rank's device: cuda:(local_rank % GPUs) when the engine has GPUs
  /// (made the frontend's current CUDA device at init), else cpu:0.
  Device device() const { return device_; }
  /// Whether another rank of this node has the same physical GPU (by UUID,
  /// so ranks that CUDA_VISIBLE_DEVICES gives one GPU each do not count as
  /// sharing cuda:0). Possible only with share_gpus.
  bool gpu_shared() const { return gpu_sharing_.shared(); }
  /// How the ranks of this node share its GPUs.
  const GpuSharing& gpu_sharing() const { return gpu_sharing_; }
  /// The NCCL_HOSTID init set for this rank because ranks of its node share
  /// GPUs ("" when it set none).
  const std::string& nccl_host_id() const { return nccl_host_id_; }
  /// One line on how this rank's GPU is shared ("" when it is not): how
  /// many ranks use it and how NCCL joins them.
  std::string gpu_sharing_note() const;

  /// A minibatch (see SyncPolicy); blocks at the in-flight-steps gate.
  /// First pushes a desync check of the world (Communicator::check_sync):
  /// ranks that pushed different collectives since the last step fail with
  /// the first differing one named. Not a blocker. So the ranks' steps must
  /// hold the same collectives (a step without any pushes no check).
  Step step(Loc loc = Loc::current());
  void wait_all(Loc loc = Loc::current()) { engine_->wait_all(loc); }
  void set_policy(const SyncPolicy& p) { engine_->set_policy(p); }
  Stats stats() const { return engine_->stats(); }

  /// Prints a line on rank 0; on other ranks only with log_all_ranks, then
  /// prefixed "[rank r] ".
  void log(const std::string& line) const;

  /// Ends this rank after an error it cannot recover from: prints `why` to
  /// stderr, then under MPI calls MPI_Abort (so ranks waiting for this one in
  /// a collective end too, instead of waiting for a timeout); without MPI it
  /// exits with `code`.
  [[noreturn]] void fail(int code, const std::string& why);

  /// Starts the trace file now, as RuntimeOptions::trace_dir does at start
  /// (for a program that learns the directory from its own options, as the
  /// trainer's --trace does). Every rank must call it: under MPI it measures
  /// the clocks (a collective). tide::UsageError if already tracing to a
  /// file or if the directory cannot take the file.
  void start_trace(const std::string& dir);
  /// The trace file being written, or "" when not tracing to one.
  const std::string& trace_path() const { return trace_path_; }

 private:
  struct MpiTag {};
  Runtime(const RuntimeOptions& options, MpiTag);
  void finish_init(const RuntimeOptions& options);
  void write_trace();
  /// The file's "tide" member: rank, world size, clock samples, whether the
  /// run reached its end.
  std::string trace_header(bool complete) const;

  std::string trace_path_;  // empty: not tracing
  ClockSample clock_start_, clock_end_;
  bool have_clock_end_ = false;
  bool owns_mpi_ = false;
  std::terminate_handler previous_terminate_ = nullptr;
  bool log_all_ranks_ = false;
  int local_rank_ = 0;
  int local_size_ = 1;
  Device device_ = cpu(0);
  GpuSharing gpu_sharing_;
  std::string nccl_host_id_;
  std::shared_ptr<Communicator> world_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<EngineScope> scope_;
};

/// wait_all on the current engine.
void wait_all(Loc loc = Loc::current());

/// True when this process was started by an MPI launcher (its variables are set).
bool launched_by_mpi();

}  // namespace tide
