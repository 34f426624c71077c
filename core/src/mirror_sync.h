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
/// the mirrors of those, down the tree. Each copy is one push to `e`. With
/// `pull_written` (the op wrote several blocks of one tree, which may
/// overlap), the written mirrors are pulled too, after every write-back,
/// so that all agree with whichever write-back landed last.
void sync_after_write(Engine& e, const std::vector<std::shared_ptr<Storage>>& written, bool pull_written = false);

/// Whether two of `owners` (owning storages) are mirrors of one block, or a
/// block and one of its mirrors, at any depth.
bool share_a_mirror_tree(const std::vector<std::shared_ptr<Storage>>& owners);

}  // namespace tide
