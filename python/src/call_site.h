// The Python caller's file and line as a tide call site: errors, blockers,
// steps and the trace then name the line of the user's script, as they name
// the user's C++ line for a C++ caller.
#pragma once

#include <tide/core/loc.h>

namespace tide::python {

/// The innermost Python frame's file, function and line, or `fallback` when
/// no Python code is running.
Loc here(Loc fallback = Loc::current());

}  // namespace tide::python
