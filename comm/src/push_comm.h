// The one way comm/ enqueues work: an op on a device's comm stream. On
// cpu:0 that stream's worker is the comm thread, the only thread of the
// rank that makes MPI calls.
#pragma once

#include <utility>

#include <tide/core/engine.h>

#include "health/liveness.h"

namespace tide::detail {

/// An op on `device`'s comm stream, as given.
template <typename Fn>
void push_on_comm_stream(Engine& e, Device device, const char* name, StorageList reads, StorageList writes,
                         Loc loc, Fn fn) {
  OpDesc op;
  op.name = name;
  op.device = device;
  op.stream = static_cast<int>(StreamKind::comm);
  op.reads = std::move(reads);
  op.writes = std::move(writes);
  op.loc = loc;
  op.fn = std::move(fn);
  e.push(std::move(op));
}

/// An op on the comm thread (cpu:0's comm stream).
template <typename Fn>
void push_comm(Engine& e, const char* name, StorageList reads, StorageList writes, Loc loc,
               Fn fn) {
  // A kernel that throws has left its collective: the SIGTERM report and
  // the roll-call answers must not place this rank inside it any more.
  push_on_comm_stream(e, cpu(0), name, std::move(reads), std::move(writes), loc,
                      [fn = std::move(fn)](const OpContext& c) {
                        try {
                          fn(c);
                        } catch (...) {
                          liveness_leave();
                          throw;
                        }
                      });
}

}  // namespace tide::detail
