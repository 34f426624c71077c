// Loc: where in the user's code an op was pushed. Every public call that
// pushes work takes one as its last, defaulted argument, so that an error
// found later on a backend thread names the user's line.
#pragma once

#include <source_location>

namespace tide {

using Loc = std::source_location;

}  // namespace tide
