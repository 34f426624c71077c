// The one way comm/ enqueues work: an op on cpu:0's comm stream, whose
// worker is the only thread of the rank that makes MPI calls.
#pragma once

#include <utility>

#include <tide/core/engine.h>

#include "liveness.h"

namespace tide::detail {

template <typename Fn>
void push_comm(Engine& e, const char* name, StorageList reads, StorageList writes, std::source_location loc,
               Fn fn) {
  OpDesc op;
  op.name = name;
  op.device = cpu(0);
  op.stream = static_cast<int>(StreamKind::comm);
  op.reads = std::move(reads);
  op.writes = std::move(writes);
  op.loc = loc;
  // A kernel that throws has left its collective: the SIGTERM report and
  // the roll-call answers must not place this rank inside it any more.
  op.fn = [fn = std::move(fn)](const OpContext& c) {
    try {
      fn(c);
    } catch (...) {
      liveness_leave();
      throw;
    }
  };
  e.push(std::move(op));
}

}  // namespace tide::detail
