#include <tide/launch/runtime.h>

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <tide/comm/mpi_check.h>
#include <tide/launch/gpu_sharing.h>

namespace tide {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// The node-local rank the launcher announces, if any (-1 when none does).
int launcher_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* v = env(name)) return std::atoi(v);
  return -1;
}

// The world rank, for the terminate handler (which has no Runtime at hand).
std::atomic<int> g_world_rank{-1};

[[noreturn]] void abort_job(int rank, const std::string& why) {
  write_flight_record(why.c_str());
  ending_job();
  std::fprintf(stderr, "tide: rank %d: %s\ntide: rank %d: ending the job (MPI_Abort)\n", rank, why.c_str(), rank);
  std::fflush(stderr);
  std::fflush(stdout);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

// An exception that no handler catches does not unwind (so ~Runtime does
// not run) and ends only this process: the other ranks would wait for it in
// their next collective until the timeout. End the job now, saying why.
[[noreturn]] void terminate_under_mpi() {
  std::string why = "std::terminate called";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      why = std::string("uncaught exception: ") + x.what();
    } catch (...) {
      why = "uncaught exception of a type not derived from std::exception";
    }
  }
  abort_job(g_world_rank.load(), why);
}

/// This host's identity for NCCL: the job's NCCL_HOSTID, else, like NCCL's
/// own, the host's name and boot id (so that two machines of one name stay
/// apart).
std::string host_identity() {
  if (const char* v = env("NCCL_HOSTID")) return v;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || !*host) std::snprintf(host, sizeof host, "host");
  std::string base = host;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  if (std::string id; std::getline(boot, id) && !id.empty()) base += ":" + id;
  return base;
}

/// Before MPI starts threads: NCCL_HOSTID is set (to this host's identity
/// when the job set none), so that giving a rank its slot's identity later
/// replaces a variable in place rather than growing the environment under
/// threads that may read it. Returns the base of the slots' identities.
std::string reserve_nccl_host_id() {
  const std::string base = host_identity();
  if (Communicator::nccl_built() && !env("NCCL_HOSTID")) ::setenv("NCCL_HOSTID", base.c_str(), 1);
  return base;
}

/// Whether CUDA's Multi-Process Service looks to be running here (several
/// processes then share a GPU in exclusive-process mode).
bool mps_in_use() {
  if (env("CUDA_MPS_PIPE_DIRECTORY")) return true;
  std::error_code ec;
  return std::filesystem::exists("/tmp/nvidia-mps/control", ec);
}

/// With the node's communicator (every rank of the node calls it): how the
/// ranks of the node share its GPUs (GpuSharing). Throws DeviceError when
/// two ranks would share a GPU and that cannot work: sharing was turned off
/// (TIDE_SHARE_GPUS=0), or the GPU's compute mode lets one process at most.
GpuSharing gpu_sharing_on_node(MPI_Comm node, int local_rank, int local_size, const RuntimeOptions& options) {
  // Every rank of the node takes part, with or without GPUs of its own.
  const int count = cuda_device_count();
  const int gpus = options.engine.cuda_devices < 0 ? count : std::min(count, options.engine.cuda_devices);
  constexpr int kLen = 32;
  std::string mine;
  if (gpus > 0) mine = cuda_device_uuid(local_rank % gpus);
  mine.resize(kLen, '-');
  std::string all(static_cast<std::size_t>(kLen) * static_cast<std::size_t>(local_size), '\0');
  TIDE_MPI_CHECK(MPI_Allgather(mine.data(), kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR, node));
  std::vector<std::string> uuids;
  const std::string none(kLen, '-');
  for (int r = 0; r < local_size; ++r) {
    std::string u = all.substr(static_cast<std::size_t>(r) * kLen, kLen);
    uuids.push_back(u == none ? std::string() : u);
  }
  const GpuSharing sharing = GpuSharing::of(uuids, local_rank);
  if (!sharing.shared()) return sharing;
  const std::string gpu = "cuda:" + std::to_string(local_rank % gpus);
  const std::string what = std::to_string(local_size) + " ranks on this node, " + std::to_string(gpus) +
                           " GPU(s): node-local rank " + std::to_string(local_rank) + " would share " + gpu +
                           " with " + std::to_string(sharing.ranks_on_my_gpu - 1) + " other rank(s)";
  if (!options.share_gpus)
    throw DeviceError(what + ", and TIDE_SHARE_GPUS=0 forbids it. Start at most one rank per GPU, leave "
                             "TIDE_SHARE_GPUS unset (ranks then share GPUs, and NCCL joins them through its "
                             "network transport), or set TIDE_CUDA_DEVICES=0 to use the CPU only");
  if (const std::string why = cuda_device_unshareable(local_rank % gpus); !why.empty() && !mps_in_use())
    throw DeviceError(what + ", but " + why + ". Start at most one rank per GPU, change the compute mode "
                             "(nvidia-smi -c DEFAULT), or set TIDE_CUDA_DEVICES=0 to use the CPU only");
  return sharing;
}

/// A variable holding a whole number, or 0.
long env_count(const char* name) {
  const char* v = env(name);
  if (!v) return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' ? n : 0;
}

/// Launchers that start several processes without MPI's start-up (srun
/// without an MPI plugin, torchrun): each process would find no MPI and run
/// as a world of one rank, training alone while looking like a job.
void refuse_launch_without_mpi() {
  const char* slurm_var = env("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
  const long slurm_tasks = env_count(slurm_var);
  if (slurm_tasks > 1 && env("SLURM_PROCID"))
    throw UsageError(std::string(slurm_var) + "=" + std::to_string(slurm_tasks) + " and SLURM_PROCID=" +
                     env("SLURM_PROCID") + ": this is one of " + std::to_string(slurm_tasks) +
                     " tasks that Slurm started, but not through MPI (no PMI or PMIx in the environment), so "
                     "it would run alone as a world of one rank. Launch with srun --mpi=pmix (srun --mpi=list "
                     "shows what this cluster has), or with mpirun -np " +
                     std::to_string(slurm_tasks) + " (or launch/tiderun) inside the allocation");
  const long world_size = env_count("WORLD_SIZE");
  if (world_size > 1 && env("RANK"))
    throw UsageError("WORLD_SIZE=" + std::to_string(world_size) + " and RANK=" + env("RANK") +
                     " (as torchrun sets them): this is one of " + std::to_string(world_size) +
                     " processes, but MPI did not start it, so it would run alone as a world of one rank. "
                     "tide takes its ranks from MPI: launch with mpirun -np " + std::to_string(world_size) +
                     " or launch/tiderun -np " + std::to_string(world_size));
}

}  // namespace

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALRANKID"})
    if (env(name)) return true;
  return false;
}

RuntimeOptions RuntimeOptions::from_env() {
  RuntimeOptions o;
  if (const char* v = env("TIDE_LOG_ALL_RANKS")) o.log_all_ranks = std::string(v) == "1";
  if (const char* v = env("TIDE_SHARE_GPUS"); v && *v) {
    const std::string s = v;
    if (s != "0" && s != "1") throw ValueError("TIDE_SHARE_GPUS=" + s + ": expected 0 or 1");
    o.share_gpus = s == "1";
  }
  if (const char* v = env("TIDE_TRACE")) o.trace_dir = v;
  return o;
}

Runtime::Runtime(const RuntimeOptions& options) : world_(Communicator::local(options.comm)) {
  finish_init(options);
}

Runtime::Runtime(const RuntimeOptions& options, MpiTag) : owns_mpi_(true) {
  const std::string nccl_host_base = reserve_nccl_host_id();
  int provided = 0;
  TIDE_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
  try {
    if (provided < MPI_THREAD_SERIALIZED)
      throw UsageError("MPI_Init_thread provided thread level " + std::to_string(provided) +
                       "; tide makes MPI calls from its comm thread and needs MPI_THREAD_SERIALIZED");
    // tide checks the return code of every MPI call and turns a failure into
    // an error naming the collective. Open MPI reports errors of non-blocking
    // collectives (a message truncated because ranks passed different counts,
    // say) against MPI_COMM_WORLD's handler, which by default ends the job
    // inside MPI_Test, before anyone can say which collective diverged.
    TIDE_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    world_ = Communicator::mpi_world(options.comm);
    MPI_Comm node;
    TIDE_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_->rank(), MPI_INFO_NULL, &node));
    MPI_Comm_rank(node, &local_rank_);
    MPI_Comm_size(node, &local_size_);
    gpu_sharing_ = gpu_sharing_on_node(node, local_rank_, local_size_, options);
    MPI_Comm_free(&node);
    if (gpu_sharing_.node_shares()) {
      nccl_host_id_ = gpu_sharing_.nccl_host_id(nccl_host_base);
      ::setenv("NCCL_HOSTID", nccl_host_id_.c_str(), 1);  // replaces the one reserve_nccl_host_id set
    }
    int announced = launcher_local_rank();
    if (announced >= 0 && announced != local_rank_)
      std::fprintf(stderr,
                   "tide: rank %d: the launcher says node-local rank %d, MPI_Comm_split_type says %d; "
                   "using %d\n",
                   world_->rank(), announced, local_rank_, local_rank_);
    finish_init(options);
    flight_record_engine(world_->rank(), engine_.get(), options.trace_dir);
    g_world_rank.store(world_->rank());
    previous_terminate_ = std::set_terminate(terminate_under_mpi);
    install_termination_report();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tide: rank %d could not start: %s\n", world_ ? world_->rank() : -1, e.what());
    std::fflush(stderr);
    world_.reset();
    MPI_Abort(MPI_COMM_WORLD, 1);  // one rank failing to start ends the job
    throw;
  } catch (...) {
    world_.reset();
    MPI_Abort(MPI_COMM_WORLD, 1);
    throw;
  }
}


void Runtime::finish_init(const RuntimeOptions& options) {
  log_all_ranks_ = options.log_all_ranks;
  if (world_) set_process_rank(world_->rank());
  engine_ = Engine::create(options.engine);
  scope_ = std::make_unique<EngineScope>(*engine_);
  if (!options.trace_dir.empty()) start_trace(options.trace_dir);
  // One GPU per rank of a node, in node-local rank order; the frontend
  // thread makes it current, as libraries that follow (NCCL) expect.
  for (const Device& d : engine_->devices()) {
    if (d.is_cuda()) {
      const int gpus = static_cast<int>(engine_->devices().size()) - options.engine.cpu_devices;
      device_ = cuda(local_rank_ % gpus);
      use_cuda_device(device_.index);
      break;
    }
  }
}

std::string Runtime::gpu_sharing_note() const {
  if (!gpu_sharing_.shared()) return "";
  return std::to_string(gpu_sharing_.ranks_on_my_gpu) + " ranks share " + device_.str() +
         " (more ranks than GPUs on this node); each has its own NCCL host identity (NCCL_HOSTID=" + nccl_host_id_ +
         "), so NCCL joins them through its network transport";
}

void Runtime::start_trace(const std::string& dir) {
  if (!trace_path_.empty()) throw UsageError("start_trace(" + dir + "): already tracing to " + trace_path_);
  if (dir.empty()) throw ValueError("start_trace: give a directory");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = dir + "/trace.rank" + std::to_string(rank()) + ".json";
  // Written now, so that a directory that cannot take it stops the job at
  // start rather than after the work, and so that a rank that never
  // reaches its end still leaves a file a merge can place.
  std::ofstream out(path, std::ios::trunc);
  if (ec || !out)
    throw UsageError("TIDE_TRACE=" + dir + ": cannot write " + path + (ec ? ": " + ec.message() : ""));
  clock_start_ = world_->clock_offset();
  out << "{\"displayTimeUnit\":\"ns\",\"tide\":" << trace_header(false) << ",\"traceEvents\":[]}\n";
  out.flush();
  if (!out) throw UsageError("TIDE_TRACE=" + dir + ": writing " + path + " failed");
  trace_path_ = path;
  engine_->set_tracing(true);
}

namespace {

std::string clock_json(const ClockSample& c) {
  return "{\"local_ns\":" + std::to_string(c.local_ns) + ",\"offset_ns\":" + std::to_string(c.offset_ns) +
         ",\"error_ns\":" + std::to_string(c.error_ns) + "}";
}

}  // namespace

std::string Runtime::trace_header(bool complete) const {
  std::string s = "{\"rank\":" + std::to_string(rank()) + ",\"world\":" + std::to_string(size()) +
                  ",\"complete\":" + (complete ? "true" : "false") + ",\"clock\":{\"start\":" +
                  clock_json(clock_start_);
  if (have_clock_end_) s += ",\"end\":" + clock_json(clock_end_);
  return s + "}}";
}

void Runtime::write_trace() {
  if (trace_path_.empty()) return;
  try {
    engine_->write_trace(trace_path_, rank(), "rank " + std::to_string(rank()), trace_header(true));
    if (engine_->trace_dropped() > 0)
      std::fprintf(stderr, "tide: rank %d: the trace kept the first 1M ops of each stream; %llu more were dropped\n",
                   rank(), static_cast<unsigned long long>(engine_->trace_dropped()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tide: rank %d: %s\n", rank(), e.what());
  }
}

Runtime::~Runtime() {
  // A failed collective cannot be cancelled, and MPI_Finalize would wait
  // for it; an exception unwinding through main means this rank will not
  // join the others' next collective. Either way: end the job now.
  if (owns_mpi_ && world_->broken()) abort_job(world_->rank(), "a collective failed: " + world_->failure());
  if (owns_mpi_ && std::uncaught_exceptions() > 0)
    abort_job(world_->rank(),
              "an exception is unwinding through the Runtime (C++ cannot show it here: catch it inside the "
              "Runtime's scope to print it, then rethrow or call Runtime::fail)");
  if (owns_mpi_) {
    // Every rank gets here: a last check covers the collectives since the
    // last step (a rank that took one step more has checked them already,
    // so this pairs with that), and the checks in flight complete together
    // before MPI_Finalize.
    try {
      // Before the last check, which then covers it.
      if (!trace_path_.empty() && !world_->broken()) {
        clock_end_ = world_->clock_offset();
        have_clock_end_ = true;
      }
      world_->check_sync();
      world_->finish_checks();
    } catch (...) {
      // Not pushed (destroyed off the frontend thread, say): nothing to wait for.
    }
  }
  write_trace();
  scope_.reset();
  if (owns_mpi_) flight_record_engine(world_->rank(), nullptr);  // not the engine freed below
  engine_.reset();  // drains queued work, then joins the workers
  // A collective or check that failed while draining (a desync in the last
  // steps, a peer that never joined) leaves a request MPI_Finalize would
  // wait for.
  if (owns_mpi_ && world_->broken()) abort_job(world_->rank(), "a collective failed: " + world_->failure());
  // The world object outlives its Runtime, retired: a `Communicator&` kept
  // from world() then throws UsageError instead of using freed memory (one
  // small object per Runtime, never freed).
  world_->retire();
  {
    static std::mutex m;
    static auto* retired = new std::vector<std::shared_ptr<Communicator>>();
    std::lock_guard<std::mutex> lock(m);
    retired->push_back(std::move(world_));
  }
  if (owns_mpi_) {
    std::set_terminate(previous_terminate_);
    ending_job();  // no more collectives: a SIGTERM from here on needs no report
    MPI_Finalize();
  }
}

Step Runtime::step(Loc loc) {
  // Before the gate: when the last step's collectives hang because the
  // ranks diverged, this check is what names the divergence, and the gate
  // may be waiting for that very step.
  world_->check_sync(loc);
  return engine_->step(loc);
}

void Runtime::fail(int code, const std::string& why) {
  std::fprintf(stderr, "[rank %d] %s\n", world_->rank(), why.c_str());
  std::fflush(stderr);
  if (owns_mpi_) {
    write_flight_record(why.c_str());
    ending_job();
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  std::fflush(stdout);
  std::_Exit(code);
}

std::unique_ptr<Runtime> Runtime::init(int& argc, char** argv) {
  RuntimeOptions o = RuntimeOptions::from_env();
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--tide-engine=", 0) == 0) {
      std::string v = a.substr(14);
      if (v == "async") o.engine.kind = EngineKind::async;
      else if (v == "naive") o.engine.kind = EngineKind::naive;
      else throw ValueError(a + ": expected async or naive");
    } else if (a.rfind("--tide-trace=", 0) == 0) {
      o.trace_dir = a.substr(13);
      if (o.trace_dir.empty()) throw ValueError(a + ": expected a directory");
    } else if (a.rfind("--tide-cpu-devices=", 0) == 0) {
      try {
        o.engine.cpu_devices = std::stoi(a.substr(19));
      } catch (const std::exception&) {
        throw ValueError(a + ": expected an integer");
      }
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  argv[argc] = nullptr;
  if (launched_by_mpi()) return std::unique_ptr<Runtime>(new Runtime(o, MpiTag{}));
  refuse_launch_without_mpi();
  return std::make_unique<Runtime>(o);
}

void Runtime::log(const std::string& line) const {
  if (rank() == 0) {
    std::printf("%s\n", line.c_str());
  } else if (log_all_ranks_) {
    std::printf("[rank %d] %s\n", rank(), line.c_str());
  }
  std::fflush(stdout);
}

void wait_all(Loc loc) { current_engine().wait_all(loc); }

}  // namespace tide
