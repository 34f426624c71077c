#!/usr/bin/env python3
"""A plain safetensors reader (standard library only, no tide code): prints
the metadata as `meta KEY VALUE` lines and each tensor as `tensor NAME DTYPE
SHAPE COUNT SUM FIRST LAST`, in the order of its bytes.

  read_safetensors.py FILE
"""
import json
import struct
import sys


# The dtypes tide writes: struct's code and the bytes of one value.
FORMATS = {"F32": ("f", 4), "F64": ("d", 8), "I32": ("i", 4)}


def main():
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    for k, v in sorted(header.pop("__metadata__", {}).items()):
        print("meta", k, v)
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        code, size = FORMATS[t["dtype"]]
        b, e = t["data_offsets"]
        count = (e - b) // size
        values = struct.unpack(f"<{count}{code}", body[b:e])
        shape = "x".join(str(d) for d in t["shape"]) or "scalar"
        first = values[0] if values else 0
        last = values[-1] if values else 0
        print("tensor", name, t["dtype"], shape, count, repr(sum(values)), repr(first), repr(last))


if __name__ == "__main__":
    main()
