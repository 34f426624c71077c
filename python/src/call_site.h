// The Python caller's file and line as a tide call site: errors, blockers,
// steps and the trace then name the line of the user's script, as they name
// the user's C++ line for a C++ caller.
#pragma once

#include <source_location>

namespace tide::python {

/// The innermost Python frame's file, function and line as a
/// std::source_location, or `fallback` when there is no Python frame or the
/// standard library's layout is not the one checked at import.
std::source_location here(std::source_location fallback = std::source_location::current());

/// Whether here() can give Python call sites in this build (checked once).
bool python_call_sites();

}  // namespace tide::python
