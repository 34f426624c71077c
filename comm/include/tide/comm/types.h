// The value types of comm/: the reduction of a collective, the error a
// failed collective raises, and a communicator's options.
#pragma once

#include <cstdint>

#include <tide/core/error.h>

namespace tide {

/// One byte, so that a collective's id (captured by its kernel) stays small.
enum class ReduceOp : std::uint8_t { sum, avg, max, min };
const char* reduce_op_name(ReduceOp op);

/// A collective failed or timed out (rethrown at a barrier as BackendError,
/// whose message carries this text).
class CommError : public Error {
  using Error::Error;
};

/// How this rank's steady clock (the one the engine's timeline is stamped
/// with) stood against rank 0's, measured by Communicator::clock_offset():
/// at `local_ns` on this rank's clock, rank 0's clock read `local_ns +
/// offset_ns`, give or take `error_ns` (half the shortest round trip of the
/// pings; a bound, not an estimate). Rank 0 and a one-rank world: offset 0,
/// error 0.
struct ClockSample {
  std::int64_t local_ns = 0;
  std::int64_t offset_ns = 0;
  std::int64_t error_ns = 0;
};

struct CommOptions {
  double timeout_s = 30.0;
  /// Compare collective sequences across ranks at check_sync() and
  /// Runtime::step() (TIDE_DESYNC_CHECK=0 turns it off).
  bool desync_check = true;
  /// Reads TIDE_COMM_TIMEOUT (seconds, > 0) and TIDE_DESYNC_CHECK (0 or 1);
  /// throws tide::ValueError if bad.
  static CommOptions from_env();
};

}  // namespace tide
