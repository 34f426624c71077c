// The engine's side of mirrors (<tide/core/mirror.h>): the copies pushed
// after an op writes a block that mirrors follow, or a mirror.
#pragma once

#include <memory>

#include <tide/core/storage.h>

namespace tide {

/// After an op wrote `owner` (a block's owning storage): pulls every mirror
/// that follows it (and theirs, down the tree); when `owner` is a mirror,
/// pushes it back into its source and goes on from there, up the tree,
/// without pulling again the mirror it came from. Each copy is one push.
void sync_after_write(std::shared_ptr<Storage> owner);

}  // namespace tide
