// Mirrors: attaching one to its source, and the copies that follow a write.
#include <tide/core/mirror.h>

#include <algorithm>
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
  for (const Storage* s = source_owner; s;) {  // the source's own sources, up to the first block
    if (s == self.get()) throw UsageError("attach_mirror: a storage cannot mirror itself or one of its mirrors");
    const Mirror* up = s->var().mirror.get();
    s = up ? up->source()->owner() : nullptr;
  }
  auto& followers = source_owner->var().followers;
  std::erase_if(followers, [](const std::weak_ptr<Storage>& f) { return f.expired(); });
  followers.push_back(self);
  self->var().mirror = std::move(mirror);
}

namespace {

bool listed(const std::vector<std::shared_ptr<Storage>>& list, const Storage* s) {
  for (const auto& x : list)
    if (x.get() == s) return true;
  return false;
}

/// Pulls every live mirror that follows `owner` and is not in `keep`, then
/// the mirrors that follow each of those, depth first.
void pull_followers(Engine& e, Storage& owner, const std::vector<std::shared_ptr<Storage>>& keep) {
  auto& followers = owner.var().followers;
  for (std::size_t i = 0; i < followers.size();) {
    std::shared_ptr<Storage> m = followers[i].lock();
    if (!m) {  // gone: drop it (the order of the others does not matter)
      followers[i] = std::move(followers.back());
      followers.pop_back();
      continue;
    }
    ++i;
    if (listed(keep, m.get())) continue;
    m->var().mirror->pull(e, m);
    pull_followers(e, *m, keep);
  }
}

}  // namespace

bool share_a_mirror_tree(const std::vector<std::shared_ptr<Storage>>& owners) {
  std::vector<const Storage*> roots;
  for (const auto& o : owners) {
    const Storage* s = o.get();
    while (const Mirror* m = s->var().mirror.get()) s = m->source()->owner();
    if (std::find(roots.begin(), roots.end(), s) != roots.end()) return true;
    roots.push_back(s);
  }
  return false;
}

void sync_after_write(Engine& e, const std::vector<std::shared_ptr<Storage>>& written, bool pull_written) {
  // Up: the written mirrors into their sources, before anything is pulled,
  // so that no pull reads a source that a later write-back would still
  // change. Every block reached is the op's result, never pulled over.
  std::vector<std::shared_ptr<Storage>> reached;
  for (const auto& w : written) {
    std::shared_ptr<Storage> s = w;
    if (listed(reached, s.get())) continue;
    reached.push_back(s);
    while (Mirror* m = s->var().mirror.get()) {  // each step again, as each write-back changes the source
      m->push_back(e, s);
      s = Storage::owner_of(m->source());
      if (!listed(reached, s.get())) reached.push_back(s);
    }
  }
  if (pull_written)
    for (const auto& w : written)
      if (Mirror* m = w->var().mirror.get()) m->pull(e, w);
  // Down: every other mirror of those blocks, and theirs.
  for (std::size_t i = 0; i < reached.size(); ++i) {
    const std::shared_ptr<Storage> s = reached[i];  // held: the loop below may drop followers
    pull_followers(e, *s, reached);
  }
}

}  // namespace tide
