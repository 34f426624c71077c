// The flight recorder: the last kFlightRecords collectives of this process
// (every communicator's), each with when it was pushed, began and ended and
// how it ended, in a ring of atomics; and, from the engine, what each stream
// runs now and ran last. A few relaxed stores per collective, nothing per op
// beyond the engine's own. When a collective fails (timeout, desync, a peer
// gone), when the launcher ends the rank (SIGTERM) or when the Runtime aborts
// the job, the rank writes it once, async-signal-safely, to
// TIDE_FLIGHT_DIR/flight.rank<R>.json (tiderun --output-dir sets the
// variable; without it, a TIDE_TRACE directory; without either, nothing is
// written). launch/tide-trace flight DIR reads every rank's file and says
// which rank is behind, where, and what it was doing. Internal to comm/.
#pragma once

#include <cstdint>

#include "desync.h"

namespace tide {
class Engine;
}

namespace tide::detail {

constexpr std::uint64_t kFlightRecords = 256;

/// Frontend: collective `id` of communicator `ident` is pushed. Returns its
/// record's number (from 1), which started/ended take.
std::uint64_t flight_pushed(std::uint64_t ident, const CollectiveId& id);
/// Comm thread: it began; it ended (`failed`: it threw). A record already
/// overwritten by a newer one is left alone.
void flight_started(std::uint64_t record);
void flight_ended(std::uint64_t record, bool failed);

/// At start (the Runtime, under MPI): this rank's number, the engine whose
/// streams the record shows (its stream names are taken now), and where
/// records go (TIDE_FLIGHT_DIR, else `trace_dir`). `engine` null: forget
/// the engine (it is being destroyed).
void flight_init(int world_rank, const Engine* engine, const char* trace_dir);
/// Writes this rank's record, once per process (later calls do nothing):
/// async-signal-safe. `why` is said in the file.
void flight_dump(const char* why);

}  // namespace tide::detail
