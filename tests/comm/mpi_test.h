// Shared by the multi-rank tests: the process's runtime.
#pragma once

#include <tide/tide.h>

namespace tide::test {

extern Runtime* g_runtime;
inline Runtime& rt() { return *g_runtime; }
inline Communicator& world() { return g_runtime->world(); }

}  // namespace tide::test
