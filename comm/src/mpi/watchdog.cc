#include "watchdog.h"

#include <mpi.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <tide/comm/communicator.h>

#include "../health/flight_recorder.h"

namespace tide::detail {

namespace {

/// One thread for the process, started at the first blocking call and never
/// stopped: it holds no resources while idle, and a thread joined at static
/// destruction could be waiting on a mutex already destroyed (so the object
/// is never destroyed either).
class Watchdog {
 public:
  static Watchdog& get() {
    static Watchdog* w = new Watchdog;
    return *w;
  }

  void arm(int rank, BlockingDeadline::clock::time_point deadline, std::function<std::string()> describe) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++generation_;
    armed_ = true;
    rank_ = rank;
    deadline_ = deadline;
    describe_ = std::move(describe);
    // A watchdog waiting for an older (earlier) deadline wakes by itself and
    // re-reads the slot; only an idle one needs waking.
    if (idle_) cv_.notify_one();
  }

  void disarm() {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
    describe_ = nullptr;
  }

 private:
  Watchdog() { std::thread([this] { run(); }).detach(); }

  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (!armed_) {
        idle_ = true;
        cv_.wait(lock, [this] { return armed_; });
        idle_ = false;
      }
      const std::uint64_t generation = generation_;
      const auto deadline = deadline_;
      cv_.wait_until(lock, deadline, [&] { return !armed_ || generation_ != generation; });
      if (armed_ && generation_ == generation && BlockingDeadline::clock::now() >= deadline) fire(lock);
    }
  }

  [[noreturn]] void fire(std::unique_lock<std::mutex>& lock) {
    // The comm thread is stuck inside MPI, so it cannot disarm: the slot is
    // ours. Keep the lock, so that nothing re-arms it meanwhile.
    const std::string why = describe_ ? describe_() : "a blocking MPI call passed its deadline";
    flight_dump(why.c_str());  // before ending_job: the record is this rank's last word
    ending_job();  // the SIGTERM that follows MPI_Abort needs no report of its own
    std::fprintf(stderr, "tide: rank %d: %s\ntide: rank %d: ending the job (MPI_Abort)\n", rank_, why.c_str(), rank_);
    std::fflush(stderr);
    std::fflush(stdout);
    // MPI is initialised with MPI_THREAD_SERIALIZED and the comm thread is in
    // a call: MPI_Abort from here is outside what the standard promises, and
    // it is what ends the job under Open MPI (its abort path takes no lock
    // the blocked call holds). If it ever returned, end this process, which
    // mpirun notices as a rank exiting without MPI_Finalize.
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
    lock.unlock();
    std::_Exit(1);
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  bool armed_ = false;
  bool idle_ = false;
  std::uint64_t generation_ = 0;
  int rank_ = 0;
  BlockingDeadline::clock::time_point deadline_{};
  std::function<std::string()> describe_;
};

}  // namespace

BlockingDeadline::BlockingDeadline(int world_rank, clock::time_point deadline, std::function<std::string()> describe) {
  Watchdog::get().arm(world_rank, deadline, std::move(describe));
}

BlockingDeadline::~BlockingDeadline() { Watchdog::get().disarm(); }

}  // namespace tide::detail
