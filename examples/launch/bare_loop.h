// A bare CUDA launch loop (compiled by nvcc in bare_loop.cu), and the same
// loop with the pieces of a runtime's completion tracking added one at a
// time, so that the cost of each shows beside tide's.
#pragma once

namespace tide::examples {

class BareLoop {
 public:
  /// Launches per event in Extra::events: as a tide GPU stream covers a run
  /// of tiny launched ops.
  static constexpr int kEventEvery = 128;
  /// What runs beside the launches.
  enum class Extra {
    none,    // launches only
    events,  // an event recorded after every 128th launch
    polled,  // those events, and another thread querying the latest one
             // (cudaEventQuery, then a yield) the whole time
  };

  BareLoop(int device, int elements);
  ~BareLoop();
  BareLoop(const BareLoop&) = delete;
  BareLoop& operator=(const BareLoop&) = delete;
  /// `launches` kernels computing y = x + 1 back to back, with `extra`
  /// beside them, then a sync. Returns the nanoseconds the launch loop
  /// itself took (the sync not counted): when it is about the whole run,
  /// the host's launches set the pace, else the device's work.
  long long run(int launches, Extra extra = Extra::none);

  /// The same launches made by a second thread, which the calling thread
  /// hands them to through a ring of slots (the launcher spins on it; the
  /// caller, when the ring is full, naps until half of it is free): the
  /// cost of moving work to another thread, which any runtime that
  /// launches off the caller's thread pays. Returns the nanoseconds until
  /// the last launch was made, thread start included (tens of
  /// microseconds, against tens of milliseconds of launches).
  long long run_handed_off(int launches);

  /// Launches the loop's kernel (y = x + 1 over `n` f32) on `stream`: what
  /// a runtime's op can launch to be compared with the loop itself.
  static void launch_add_one(const void* x, void* y, int n, void* stream);

 private:
  int device_;
  int elements_;
  void* stream_ = nullptr;
  void* x_ = nullptr;
  void* y_ = nullptr;
  void* events_[2] = {nullptr, nullptr};
};

}  // namespace tide::examples
