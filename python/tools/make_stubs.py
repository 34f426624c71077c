"""Writes the type stubs of tide's compiled module (tide/_tide.pyi) from the
signatures pybind11 puts in its docstrings, so editors and type checkers see
every function, class, method and property with its types.

    PYTHONPATH=build/python python3 python/tools/make_stubs.py > python/tide/_tide.pyi
    PYTHONPATH=build/python python3 python/tools/make_stubs.py --check python/tide/_tide.pyi

--check exits 1, saying what differs, when the committed stubs name other
functions, classes, methods or properties than the module has (ctest's
python.stubs runs it). It compares names, not the spelling of types, which
varies with the pybind11 that built the module.
"""
import argparse
import ast
import enum
import re
import sys

import tide._tide as mod

HEADER = '''# Type stubs of tide's compiled module, written by python/tools/make_stubs.py
# from the module itself: regenerate them after changing a binding.
import builtins
from typing import Any, Dict, Iterator, List, Optional, Tuple, overload

import numpy
'''


def clean(text):
    """Types as a stub spells them: the module's names unqualified, Python's
    capsule (no type of its own in typing) as Any."""
    text = text.replace("tide._tide.", "")
    text = re.sub(r"\bcapsule\b", "Any", text)
    return re.sub(r"\btuple\b", "Tuple[Any, ...]", text)


def split_top(params):
    """Splits a parameter list at its top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in params:
        if ch in "[(<":
            depth += 1
        elif ch in "])>":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def signature(line):
    """'name(a: int, b: str = 'x') -> ret' as (name, params, ret); defaults as '...'."""
    m = re.match(r"(\w+)\((.*)\)(?: -> (.*))?$", line.strip())
    if not m:
        return None
    name, params, ret = m.group(1), m.group(2), m.group(3) or "None"
    ps = []
    for p in split_top(params):
        if p in ("*", "/") or p.startswith("*"):
            ps.append(p)
            continue
        head, eq, _ = p.partition("=")
        head = "self" if head.strip().startswith("self:") else clean(head.strip())
        ps.append(head + (" = ..." if eq else ""))
    return name, ps, clean(ret.strip())


def signatures(doc):
    """Every signature a pybind11 docstring gives (one, or an overload each)."""
    lines = (doc or "").splitlines()
    if len(lines) > 1 and lines[1].strip() == "Overloaded function.":
        return [s for s in (signature(re.sub(r"^\d+\. ", "", l)) for l in lines if re.match(r"^\d+\. ", l)) if s]
    s = signature(lines[0]) if lines else None
    return [s] if s else []


def qualify(text, shadowed):
    """Types named as builtins.X where the class defines a method X (Tensor's
    bool, int and float), which its body's annotations would otherwise name."""
    for n in shadowed:
        text = re.sub(r"(?<![\w.])" + n + r"\b", "builtins." + n, text)
    return text


def emit_function(out, obj, indent="", static=False, cls=None, shadowed=()):
    sigs = signatures(obj.__doc__)
    for name, ps, ret in sigs:
        ps = [p if ":" not in p else p.split(":", 1)[0] + ":" + qualify(p.split(":", 1)[1], shadowed) for p in ps]
        ret = qualify(ret, shadowed)
        if cls and re.match(r"__i(add|sub|mul)__$", name):
            ret = cls  # in place: returns the tensor itself
        if len(sigs) > 1:
            out.append(f"{indent}@overload")
        if static:
            out.append(f"{indent}@staticmethod")
        out.append(f"{indent}def {name}({', '.join(ps)}) -> {ret}: ...")


def emit_class(out, name, cls):
    bases = [b for b in cls.__bases__ if b.__module__ != "pybind11_builtins"]
    base = ", ".join(b.__name__ for b in bases)
    out.append(f"class {name}({base}):" if base else f"class {name}:")
    body = []
    shadowed = [n for n in ("bool", "int", "float") if n in cls.__dict__]
    for key, value in cls.__dict__.items():
        if key.startswith("_") and key not in ("__init__", "__enter__", "__exit__", "__getitem__", "__setitem__", "__len__",
                                               "__bool__", "__float__", "__int__", "__array__", "__dlpack__",
                                               "__dlpack_device__") and not re.match(r"__[ir]?(add|sub|mul|truediv|neg|matmul|pow)__$|__(gt|ge|lt|le|eq|ne|hash)__$", key):
            continue
        if isinstance(value, property):
            doc = (value.fget.__doc__ or "").splitlines()
            ret = clean(doc[0].split("->", 1)[1].strip()) if doc and "->" in doc[0] else "Any"
            ret = qualify(ret, shadowed)
            if value.fset is not None:
                body.append(f"    {key}: {ret}")
            else:
                body.append("    @property")
                body.append(f"    def {key}(self) -> {ret}: ...")
        elif isinstance(value, staticmethod):
            emit_function(body, value.__func__, "    ", static=True, shadowed=shadowed)
        elif callable(value) and value.__doc__ and "(" in value.__doc__.splitlines()[0]:
            emit_function(body, value, "    ", cls=name, shadowed=shadowed)
        elif isinstance(value, cls):  # an enum's members
            body.append(f"    {key}: {name}")
    if issubclass(cls, BaseException) and not body:
        body.append("    ...")
    out.extend(body or ["    ..."])
    out.append("")


def stubs():
    out = [HEADER, "__version__: str", ""]
    names = sorted(n for n in dir(mod) if not n.startswith("_"))
    classes = [n for n in names if isinstance(getattr(mod, n), type)]
    # Bases first: Error before its subclasses.
    classes.sort(key=lambda n: (len(getattr(mod, n).__mro__), n))
    for n in classes:
        emit_class(out, n, getattr(mod, n))
    for n in names:
        obj = getattr(mod, n)
        if not isinstance(obj, type) and callable(obj):
            emit_function(out, obj)
    return "\n".join(out).rstrip() + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", metavar="PYI", help="compare with this file instead of printing")
    args = ap.parse_args()
    text = stubs()
    if not args.check:
        sys.stdout.write(text)
        return 0
    with open(args.check) as f:
        old = names(f.read())
    new = names(text)
    if old == new:
        print(f"{args.check}: up to date ({len(new)} names)")
        return 0
    for n in sorted(new - old):
        print(f"missing from {args.check}: {n}")
    for n in sorted(old - new):
        print(f"in {args.check}, not in the module: {n}")
    print(f"{args.check} is stale: regenerate it with python/tools/make_stubs.py (see its docstring)")
    return 1


def names(text):
    """The qualified names a stub defines: functions, classes, their methods
    and attributes (an overload counted once)."""
    found = set()
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.add(node.name)
        if isinstance(node, ast.AnnAssign):
            found.add(node.target.id)
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef):
                    found.add(f"{node.name}.{member.name}")
                elif isinstance(member, ast.AnnAssign):
                    found.add(f"{node.name}.{member.target.id}")
    return found


if __name__ == "__main__":
    sys.exit(main())
