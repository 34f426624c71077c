// Mirrors: attaching one to its source, and the copies that follow a write.
#include <tide/core/mirror.h>

#include <utility>

#include <tide/core/error.h>

#include "mirror_sync.h"

namespace tide {

void attach_mirror(const std::shared_ptr<Storage>& self, std::shared_ptr<Mirror> mirror) {
  if (!self || !mirror || !mirror->source())
    throw UsageError("attach_mirror: needs a storage and a mirror with a source");
  if (self->is_view()) throw UsageError("attach_mirror: a mirror must own its storage, not be a view of one");
  if (self->var().mirror) throw UsageError("attach_mirror: this storage already is a mirror");
  Storage* source_owner = mirror->source()->owner();
  if (source_owner == self.get()) throw UsageError("attach_mirror: a storage cannot mirror itself");
  auto& followers = source_owner->var().followers;
  std::erase_if(followers, [](const std::weak_ptr<Storage>& f) { return f.expired(); });
  followers.push_back(self);
  self->var().mirror = std::move(mirror);
}

namespace {

/// Pulls every live mirror that follows `owner` except `skip`, then the
/// mirrors that follow each of those, depth first.
void pull_followers(Storage& owner, const Storage* skip) {
  auto& followers = owner.var().followers;
  for (std::size_t i = 0; i < followers.size();) {
    std::shared_ptr<Storage> m = followers[i].lock();
    if (!m) {  // gone: drop it (the order of the others does not matter)
      followers[i] = std::move(followers.back());
      followers.pop_back();
      continue;
    }
    ++i;
    if (m.get() == skip) continue;
    m->var().mirror->pull(m);
    pull_followers(*m, nullptr);
  }
}

}  // namespace

void sync_after_write(std::shared_ptr<Storage> owner) {
  const Storage* came_from = nullptr;
  while (owner) {
    pull_followers(*owner, came_from);
    Mirror* m = owner->var().mirror.get();
    if (!m) return;
    m->push_back(owner);
    came_from = owner.get();
    owner = Storage::owner_of(m->source());
  }
}

}  // namespace tide
