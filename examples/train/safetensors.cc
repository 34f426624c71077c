#include "safetensors.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "common/json_writer.h"

namespace tide::train {

namespace {

static_assert(sizeof(double) == 8, "F64 is 8 bytes");
constexpr std::uint64_t kMaxHeader = 100'000'000;  // the safetensors package's own limit

bool little_endian() {
  const std::uint16_t one = 1;
  unsigned char b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

/// A JSON value: what a safetensors header holds (no floats, no booleans).
struct Json {
  enum Kind { object, array, string, number } kind = number;
  std::vector<std::pair<std::string, Json>> members;  // object
  std::vector<Json> items;                            // array
  std::string text;                                   // string
  std::uint64_t value = 0;                            // number: a whole number >= 0
};

class Parser {
 public:
  Parser(const std::string& s, const std::string& path) : s_(s), path_(path) {}
  Json document() {
    Json v = parse(0);
    skip_space();
    if (pos_ != s_.size()) fail("text after the header's object");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(path_ + ": bad safetensors header (" + what + " at byte " + std::to_string(pos_) + ")");
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  char peek() {
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end");
    return s_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  Json parse(int depth) {
    if (depth > 8) fail("nesting too deep");
    // A header's values are few and small: a bound on them keeps a forged
    // header (up to kMaxHeader bytes) from costing gigabytes of nodes.
    if (++nodes_ > kMaxNodes) fail("more than " + std::to_string(kMaxNodes) + " values");
    const char c = peek();
    Json v;
    if (c == '{') {
      v.kind = Json::object;
      ++pos_;
      if (peek() == '}') {
        ++pos_;
        return v;
      }
      for (;;) {
        if (peek() != '"') fail("expected a name");
        std::string key = string();
        expect(':');
        v.members.emplace_back(std::move(key), parse(depth + 1));
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = Json::array;
      ++pos_;
      if (peek() == ']') {
        ++pos_;
        return v;
      }
      for (;;) {
        if (v.items.size() == kMaxItems) fail("an array of more than " + std::to_string(kMaxItems) + " items");
        v.items.push_back(parse(depth + 1));
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::string;
      v.text = string();
      return v;
    }
    if (c >= '0' && c <= '9') {
      v.kind = Json::number;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        const std::uint64_t d = static_cast<std::uint64_t>(s_[pos_] - '0');
        if (v.value > (~std::uint64_t{0} - d) / 10) fail("a number too large");
        v.value = v.value * 10 + d;
        ++pos_;
      }
      if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E')) fail("a number not whole");
      return v;
    }
    fail("unexpected character");
  }
  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (s_.size() - pos_ < 4) fail("a short \\u escape");
          unsigned cp = 0;
          for (int i = 0; i < 4; ++i) {
            const char h = s_[pos_++];
            cp <<= 4;
            if (h >= '0' && h <= '9') cp |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f') cp |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') cp |= static_cast<unsigned>(h - 'A' + 10);
            else fail("a bad \\u escape");
          }
          if (cp >= 0xd800 && cp < 0xe000) fail("a surrogate in a \\u escape");
          if (cp < 0x80) {
            out += static_cast<char>(cp);
          } else if (cp < 0x800) {
            out += static_cast<char>(0xc0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3f));
          } else {
            out += static_cast<char>(0xe0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
          }
          break;
        }
        default: fail("a bad escape");
      }
    }
  }

  static constexpr std::size_t kMaxNodes = 1'000'000;  // about 100 MB of nodes at most
  static constexpr std::size_t kMaxItems = 64;          // a shape's dimensions, or an offset pair
  const std::string& s_;
  const std::string& path_;
  std::size_t pos_ = 0;
  std::size_t nodes_ = 0;
};

}  // namespace

std::string encode_safetensors(const StFile& f) {
  if (!little_endian()) throw std::invalid_argument("safetensors: this machine is not little-endian");
  std::ostringstream json;
  examples::JsonWriter w(json, 0);
  w.begin_object().key("__metadata__").begin_object();
  for (const auto& [k, v] : f.metadata) w.field(k, v);
  w.end_object();
  std::uint64_t offset = 0;
  std::vector<std::string> seen;
  for (const StTensor& t : f.tensors) {
    if (t.name.empty() || t.name == "__metadata__" || std::find(seen.begin(), seen.end(), t.name) != seen.end())
      throw std::invalid_argument("safetensors: tensor name '" + t.name + "' is empty, reserved or given twice");
    seen.push_back(t.name);
    std::uint64_t n = 1;
    for (std::int64_t d : t.shape) {
      if (d < 0) throw std::invalid_argument("safetensors: tensor '" + t.name + "' has a negative dimension");
      n *= static_cast<std::uint64_t>(d);
    }
    if (n != t.values.size())
      throw std::invalid_argument("safetensors: tensor '" + t.name + "' has " + std::to_string(t.values.size()) +
                                  " values for a shape of " + std::to_string(n));
    w.key(t.name).begin_object().field("dtype", "F64").key("shape").begin_array();
    for (std::int64_t d : t.shape) w.value(d);
    w.end_array().key("data_offsets").begin_array().value(offset).value(offset + 8 * n).end_array().end_object();
    offset += 8 * n;
  }
  w.end_object();
  std::string header = json.str();
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-aligned
  std::string out(8, '\0');
  const std::uint64_t size = header.size();
  std::memcpy(out.data(), &size, 8);
  out += header;
  out.reserve(out.size() + offset);
  for (const StTensor& t : f.tensors)
    out.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * sizeof(double));
  return out;
}

StFile decode_safetensors(const std::string& bytes, const std::string& path) {
  auto bad = [&](const std::string& what) -> std::runtime_error {
    return std::runtime_error(path + ": not a readable safetensors file (" + what + ")");
  };
  if (!little_endian()) throw bad("this machine is not little-endian");
  if (bytes.size() < 8) throw bad("shorter than its 8-byte header size");
  std::uint64_t header_size;
  std::memcpy(&header_size, bytes.data(), 8);
  if (header_size > kMaxHeader || header_size > bytes.size() - 8)
    throw bad("a header of " + std::to_string(header_size) + " bytes in a file of " + std::to_string(bytes.size()));
  const std::string header = bytes.substr(8, header_size);
  const std::uint64_t data_size = bytes.size() - 8 - header_size;
  const char* data = bytes.data() + 8 + header_size;
  const Json doc = Parser(header, path).document();
  if (doc.kind != Json::object) throw bad("the header is not an object");
  StFile f;
  struct Range {
    std::uint64_t begin, end;
    std::size_t index;
  };
  std::vector<Range> ranges;
  for (const auto& [name, v] : doc.members) {
    if (name == "__metadata__") {
      if (v.kind != Json::object) throw bad("__metadata__ is not an object");
      for (const auto& [k, m] : v.members) {
        if (m.kind != Json::string) throw bad("metadata '" + k + "' is not a string");
        f.metadata[k] = m.text;
      }
      continue;
    }
    if (v.kind != Json::object) throw bad("tensor '" + name + "' is not an object");
    const Json *dtype = nullptr, *shape = nullptr, *offsets = nullptr;
    for (const auto& [k, m] : v.members) {
      if (k == "dtype") dtype = &m;
      else if (k == "shape") shape = &m;
      else if (k == "data_offsets") offsets = &m;
    }
    if (!dtype || !shape || !offsets) throw bad("tensor '" + name + "' lacks dtype, shape or data_offsets");
    if (dtype->kind != Json::string || dtype->text != "F64")
      throw bad("tensor '" + name + "' is " + (dtype->kind == Json::string ? dtype->text : "?") + ", not F64");
    if (shape->kind != Json::array || offsets->kind != Json::array || offsets->items.size() != 2)
      throw bad("tensor '" + name + "' has a malformed shape or data_offsets");
    StTensor t;
    t.name = name;
    std::uint64_t n = 1;
    for (const Json& d : shape->items) {
      if (d.kind != Json::number || d.value > (std::uint64_t{1} << 62)) throw bad("tensor '" + name + "' has a bad dimension");
      if (d.value != 0 && n > data_size / d.value) throw bad("tensor '" + name + "' has more values than the file holds");
      n *= d.value;
      t.shape.push_back(static_cast<std::int64_t>(d.value));
    }
    const Json &b = offsets->items[0], &e = offsets->items[1];
    if (b.kind != Json::number || e.kind != Json::number || b.value > e.value || e.value > data_size)
      throw bad("tensor '" + name + "' has data_offsets outside the file's " + std::to_string(data_size) + " bytes");
    if (e.value - b.value != 8 * n)
      throw bad("tensor '" + name + "' has " + std::to_string(e.value - b.value) + " bytes for " + std::to_string(n) +
                " F64 values");
    ranges.push_back({b.value, e.value, f.tensors.size()});
    f.tensors.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& x, const Range& y) { return x.begin < y.begin || (x.begin == y.begin && x.end < y.end); });
  std::uint64_t at = 0;
  for (const Range& r : ranges) {
    if (r.begin != at) throw bad("tensor byte ranges overlap or leave a gap at byte " + std::to_string(at));
    at = r.end;
  }
  if (at != data_size) throw bad(std::to_string(data_size - at) + " bytes after the last tensor");
  std::vector<StTensor> ordered;
  ordered.reserve(ranges.size());
  for (const Range& r : ranges) {
    StTensor& t = f.tensors[r.index];
    t.values.resize((r.end - r.begin) / 8);
    if (!t.values.empty()) std::memcpy(t.values.data(), data + r.begin, r.end - r.begin);
    ordered.push_back(std::move(t));
  }
  f.tensors = std::move(ordered);
  return f;
}

}  // namespace tide::train
