// Mirrors: how a tensor can be a view of elements that are not one run
// (a column, a step, a transpose) when tensors have no strides.
//
// A mirror is a storage of its own, contiguous, that the engine keeps equal
// to the elements it picks from another block (its source), in stream
// order: after any op that writes the source, the engine pushes a copy of
// the picked elements into each mirror that follows it; after any op that
// writes a mirror, a copy of the mirror back into the source (and from
// there into the source's other mirrors, and up to the source's own source
// when it is a mirror too). The copies go to the stream kind of the op
// that wrote; all write-backs of one op are pushed before any pull, and a
// storage the op wrote is never pulled over. Programs see one set of values, as with a
// strided view; each write through either side costs one extra copy op per
// mirror. The ops library makes mirrors (tide::as_strided); the engine
// only calls them back.
#pragma once

#include <memory>

#include <tide/core/storage.h>

namespace tide {

class Engine;

class Mirror {
 public:
  virtual ~Mirror() = default;
  /// The storage whose elements this mirror picks (possibly a view of a
  /// block), held for the mirror's lifetime.
  virtual const std::shared_ptr<Storage>& source() const = 0;
  /// Pushes to `e` the op that copies the picked elements of the source
  /// into `self`, this mirror's storage.
  virtual void pull(Engine& e, const std::shared_ptr<Storage>& self) = 0;
  /// Pushes to `e` the op that copies `self` into the picked elements of the
  /// source (an op with OpDesc::partial_write).
  virtual void push_back(Engine& e, const std::shared_ptr<Storage>& self) = 0;
};

/// Makes `self` (a storage owning its memory, on the source's engine and
/// device, already holding the picked elements or an op that writes them)
/// follow `mirror`'s source from now on. Frontend thread only.
/// tide::UsageError for a view, a storage that already is a mirror, or a
/// source that is `self` or follows it (a cycle).
void attach_mirror(const std::shared_ptr<Storage>& self, std::shared_ptr<Mirror> mirror);

/// The mirror `s`'s block follows, or null when it is no mirror.
inline const Mirror* mirror_of(const Storage& s) { return s.var().mirror.get(); }

}  // namespace tide
