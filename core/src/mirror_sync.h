// The engine's side of mirrors (<tide/core/mirror.h>): the copies pushed
// after an op writes a block that mirrors follow, or a mirror.
#pragma once

#include <memory>
#include <vector>

#include <tide/core/storage.h>

namespace tide {

class Engine;

/// After an op wrote the blocks `written` (owning storages, each once):
/// pushes every written mirror back into its source, and that source into
/// its own when it is a mirror, up the tree; then pulls every live mirror
/// of each block reached that was not itself written or written back, and
/// the mirrors of those, down the tree. Each copy is one push to `e`.
void sync_after_write(Engine& e, const std::vector<std::shared_ptr<Storage>>& written);

}  // namespace tide
