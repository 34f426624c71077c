#include "desync.h"

#include <algorithm>
#include <map>
#include <sstream>

#include <tide/comm/types.h>

namespace tide::detail {

CollectiveSig CollectiveId::sig() const {
  const bool has_data = count >= 0;
  CollectiveSig s;
  s.w[0] = static_cast<std::uint64_t>(kind) | (has_data ? static_cast<std::uint64_t>(dtype) : 0) << 8 |
           static_cast<std::uint64_t>(op ? static_cast<std::uint8_t>(static_cast<int>(*op) + 1) : 0) << 16 |
           static_cast<std::uint64_t>(static_cast<std::uint32_t>(devices)) << 32;
  s.w[1] = static_cast<std::uint64_t>(count);
  s.w[2] = static_cast<std::uint64_t>(static_cast<std::int64_t>(root));
  return s;
}

CollectiveId CollectiveId::from_sig(const CollectiveSig& s, std::uint64_t seq) {
  CollectiveId id;
  id.kind = static_cast<CollectiveKind>(s.w[0] & 0xff);
  id.dtype = static_cast<DType>((s.w[0] >> 8) & 0xff);
  // 0: none; a byte past the last ReduceOp (another build, say) is none too.
  if (const int op = static_cast<int>((s.w[0] >> 16) & 0xff); op > 0 && op <= static_cast<int>(ReduceOp::min) + 1)
    id.op = static_cast<ReduceOp>(op - 1);
  id.devices = static_cast<std::int32_t>(s.w[0] >> 32);
  id.count = static_cast<std::int64_t>(s.w[1]);
  id.root = static_cast<std::int32_t>(static_cast<std::int64_t>(s.w[2]));
  id.seq = seq;
  return id;
}

namespace {

/// The parts inside the parentheses: "1000 x f32", "sum", "root 0".
std::vector<std::string> parts(const CollectiveId& id) {
  std::vector<std::string> out;
  if (id.count >= 0) {
    std::string data = std::to_string(id.count) + " x " + dtype_name(id.dtype);
    if (id.devices > 1) data = std::to_string(id.devices) + " devices x " + data;
    out.push_back(std::move(data));
  }
  if (id.op) out.push_back(reduce_op_name(*id.op));
  if (id.root >= 0) out.push_back("root " + std::to_string(id.root));
  return out;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

}  // namespace

std::string CollectiveId::describe() const {
  auto p = parts(*this);
  std::string s = collective_kind_name(kind);
  if (!p.empty()) s += " (" + join(p, ", ") + ")";
  return s;
}

std::string CollectiveId::str(const std::string& peers) const {
  auto p = parts(*this);
  p.push_back(peers);
  return std::string(collective_kind_name(kind)) + " #" + std::to_string(seq) + " (" + join(p, ", ") + ")";
}

namespace {
// splitmix64's finalizer: every input bit reaches every output bit.
std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}
}  // namespace

std::uint64_t chain_hash(std::uint64_t h, const CollectiveSig& s) {
  // Chained, so the order of collectives counts, not only the multiset.
  h = mix64(h ^ (s.w[0] + 0x9e3779b97f4a7c15ull));
  h = mix64(h ^ (s.w[1] + 0x9e3779b97f4a7c15ull));
  return mix64(h ^ (s.w[2] + 0x9e3779b97f4a7c15ull));
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (i) s += ',';
    s += std::to_string(ranks[i]);
    if (j > i) {
      s += j >= i + 2 ? '-' : ',';  // a run of three or more as a range
      s += std::to_string(ranks[j]);
    }
    i = j + 1;
  }
  return s;
}

namespace {

/// "rank 0 pushed all_reduce (...), rank 1 pushed broadcast (...)": ranks
/// grouped by what they did, groups in order of their lowest rank.
/// `what[r]` describes rank r's entry.
std::string by_group(const std::vector<std::string>& what) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> groups;
  for (std::size_t r = 0; r < what.size(); ++r) {
    auto& g = groups[what[r]];
    if (g.empty()) order.push_back(what[r]);
    g.push_back(static_cast<int>(r));
  }
  std::vector<std::string> out;
  for (const auto& w : order) out.push_back(rank_list(groups[w]) + " " + w);
  return join(out, ", ");
}

std::string broken_part(const std::vector<CheckRecord>& ranks) {
  std::vector<int> broken;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    if (ranks[r].broken) broken.push_back(static_cast<int>(r));
  if (broken.empty()) return "";
  const CheckRecord& first = ranks[static_cast<std::size_t>(broken[0])];
  std::string s = rank_list(broken) + " had already failed";
  if (!first.reason.empty()) s += " (rank " + std::to_string(broken[0]) + ": " + first.reason + ")";
  return s;
}

}  // namespace

std::string diagnose(const std::vector<CheckRecord>& ranks) {
  if (ranks.empty()) return "";
  bool same = true;
  for (const auto& r : ranks) same = same && r.count == ranks[0].count && r.hash == ranks[0].hash && !r.broken;
  if (same) return "";

  const std::uint64_t base = ranks[0].base;
  std::uint64_t longest = 0;
  for (const auto& r : ranks) longest = std::max(longest, r.count > r.base ? r.count - r.base : 0);
  std::string found;
  std::uint64_t agreed = 0;  // collectives since base that every rank's window shows alike
  for (std::uint64_t i = 0; i < longest && found.empty(); ++i) {
    std::vector<std::string> what(ranks.size());
    std::vector<CollectiveSig> sigs(ranks.size());
    bool unknown = false, differ = false;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      const CheckRecord& rec = ranks[r];
      if (rec.base + i >= rec.count) {
        what[r] = "pushed none before the check";
      } else if (i < rec.window.size()) {
        sigs[r] = rec.window[i];
        what[r] = "pushed " + CollectiveId::from_sig(rec.window[i], base + i).describe();
      } else {
        unknown = true;  // past what the window keeps
      }
      if (r > 0 && what[r] != what[0]) differ = true;
    }
    if (unknown) break;
    if (differ) {
      found = "desync at collective #" + std::to_string(base + i) + ": " + by_group(what);
    } else {
      agreed = i + 1;
    }
  }
  if (found.empty()) {
    bool hashes_differ = false;
    for (const auto& r : ranks) hashes_differ = hashes_differ || r.count != ranks[0].count || r.hash != ranks[0].hash;
    if (hashes_differ) {
      std::vector<std::string> counts(ranks.size());
      for (std::size_t r = 0; r < ranks.size(); ++r)
        counts[r] = "pushed " + std::to_string(ranks[r].count) + " in all";
      found = "desync after collective #" + std::to_string(base + agreed) +
              ": the collectives since #" + std::to_string(base) + " that the check keeps agree, but " +
              by_group(counts) + " and the sequences differ later";
      if (agreed == 0) found = "desync at or after collective #" + std::to_string(base) + ": " + by_group(counts);
    }
  }
  const std::string broken = broken_part(ranks);
  if (found.empty()) return broken + "; the collectives pushed so far agree, and every rank stops here instead of "
                                     "waiting for the failed one";
  return broken.empty() ? found : found + "; " + broken;
}

std::string diagnose_arrival(const std::vector<std::uint64_t>& seqs, const std::vector<CollectiveSig>& sigs) {
  if (seqs.empty()) return "";
  bool same = true;
  for (std::size_t r = 1; r < seqs.size(); ++r) same = same && seqs[r] == seqs[0] && sigs[r] == sigs[0];
  if (same) return "";
  std::vector<std::string> what(seqs.size());
  for (std::size_t r = 0; r < seqs.size(); ++r) {
    what[r] = "pushed " + CollectiveId::from_sig(sigs[r], seqs[r]).describe();
    if (seqs[r] != seqs[0]) what[r] += " as its #" + std::to_string(seqs[r]);
  }
  return "desync at collective #" + std::to_string(seqs[0]) + ": " + by_group(what);
}

}  // namespace tide::detail
