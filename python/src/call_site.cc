// The Python caller's frame as a tide::Loc: its file and function names are
// interned here (one copy per code object and line, kept for the life of the
// process, as a Loc does not own its strings).
#include "call_site.h"

#include <Python.h>
#include <frameobject.h>

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>

namespace tide::python {

namespace {

struct Key {
  PyCodeObject* code;
  int line;
  bool operator==(const Key& o) const { return code == o.code && line == o.line; }
};
struct KeyHash {
  std::size_t operator()(const Key& k) const {
    return std::hash<const void*>()(k.code) ^ (static_cast<std::size_t>(k.line) * 0x9E3779B97F4A7C15ull);
  }
};

/// Called with the GIL held (every binding is), so no lock. Code objects are
/// kept alive (one reference each) so that their addresses are never reused
/// for another function while their records stand.
struct Sites {
  std::unordered_map<Key, Loc, KeyHash> by_key;
  std::deque<std::string> strings;

  Loc find(PyCodeObject* code, int line) {
    const Key k{code, line};
    if (auto it = by_key.find(k); it != by_key.end()) return it->second;
    Py_INCREF(reinterpret_cast<PyObject*>(code));
    strings.push_back(text_of(reinterpret_cast<PyObject*>(code), "co_filename"));
    const char* file = strings.back().c_str();
    strings.push_back(text_of(reinterpret_cast<PyObject*>(code), "co_name"));
    const char* function = strings.back().c_str();
    return by_key[k] = Loc(file, function, static_cast<std::uint_least32_t>(line > 0 ? line : 0));
  }

  static std::string text_of(PyObject* code, const char* attr) {
    std::string out = "?";
    if (PyObject* v = PyObject_GetAttrString(code, attr)) {
      if (const char* s = PyUnicode_AsUTF8(v)) out = s;
      Py_DECREF(v);
    }
    PyErr_Clear();
    return out;
  }
};

Sites& sites() {
  static auto* s = new Sites();  // outlives interpreter teardown
  return *s;
}

}  // namespace

Loc here(Loc fallback) {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed; null outside Python code
  if (!frame) return fallback;
  PyCodeObject* code = PyFrame_GetCode(frame);  // a new reference
  const int line = PyFrame_GetLineNumber(frame);
  const Loc loc = sites().find(code, line);
  Py_DECREF(reinterpret_cast<PyObject*>(code));
  return loc;
}

}  // namespace tide::python
