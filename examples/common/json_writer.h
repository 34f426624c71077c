// JsonWriter: a tiny streaming JSON writer for the examples' --json output.
//
//   JsonWriter w(out);
//   w.begin_object();
//   w.field("name", "add").field("ns", 123.4).key("runs").begin_array();
//   w.value(1).value(2);
//   w.end_array();
//   w.end_object();
//
// Commas, indentation and string escaping are handled here; nesting is the
// caller's job (begin_x/end_x must pair up). Non-finite doubles are written as
// null, since JSON has no NaN or infinity.
#pragma once

#include <charconv>
#include <cmath>
#include <concepts>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace tide::examples {

class JsonWriter {
 public:
  /// Pretty-prints with `indent` spaces per level; 0 writes one line.
  explicit JsonWriter(std::ostream& os, int indent = 2) : os_(os), indent_(indent) {}

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }

  /// The key of the next value inside an object.
  JsonWriter& key(std::string_view k) {
    separate();
    write_string(k);
    os_ << (indent_ ? ": " : ":");
    after_key_ = true;
    return *this;
  }

  JsonWriter& value(std::string_view s) {
    separate();
    write_string(s);
    return *this;
  }
  JsonWriter& value(const char* s) { return s ? value(std::string_view(s)) : null(); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b) {
    separate();
    os_ << (b ? "true" : "false");
    return *this;
  }
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  JsonWriter& value(T n) {
    separate();
    os_ << +n;  // + so that char types print as numbers
    return *this;
  }
  JsonWriter& value(double d) {
    if (!std::isfinite(d)) return null();
    separate();
    char buf[32];
    auto res = std::to_chars(buf, buf + sizeof buf, d);  // shortest exact round-trip form
    os_.write(buf, res.ptr - buf);
    return *this;
  }
  JsonWriter& value(float f) { return value(static_cast<double>(f)); }
  JsonWriter& null() {
    separate();
    os_ << "null";
    return *this;
  }

  /// key(k).value(v) in one call.
  template <typename T>
  JsonWriter& field(std::string_view k, const T& v) {
    return key(k).value(v);
  }

 private:
  JsonWriter& open(char c) {
    separate();
    os_ << c;
    first_.push_back(true);
    return *this;
  }

  JsonWriter& close(char c) {
    bool empty = first_.empty() || first_.back();
    if (!first_.empty()) first_.pop_back();
    if (!empty) newline();
    os_ << c;
    if (first_.empty() && indent_) os_ << '\n';  // the document is complete
    return *this;
  }

  // Before a key, or a value that does not follow a key: a comma unless it is
  // the first item of its container, then a line break.
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;  // the top-level value
    if (!first_.back()) os_ << ',';
    first_.back() = false;
    newline();
  }

  void newline() {
    if (!indent_) return;
    os_ << '\n' << std::string(first_.size() * static_cast<std::size_t>(indent_), ' ');
  }

  void write_string(std::string_view s) {
    os_ << '"';
    for (char ch : s) {
      auto c = static_cast<unsigned char>(ch);
      switch (c) {
        case '"': os_ << "\\\""; break;
        case '\\': os_ << "\\\\"; break;
        case '\b': os_ << "\\b"; break;
        case '\f': os_ << "\\f"; break;
        case '\n': os_ << "\\n"; break;
        case '\r': os_ << "\\r"; break;
        case '\t': os_ << "\\t"; break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            os_ << buf;
          } else {
            os_ << ch;  // UTF-8 bytes pass through unchanged
          }
      }
    }
    os_ << '"';
  }

  std::ostream& os_;
  int indent_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace tide::examples
