#!/usr/bin/env python3
"""tide-trace ops on a made-up trace: two streams, a frontend track and a
non-op span; every figure it prints is checked against the hand-computed
one. Usage: trace_ops_test.py TIDE_TRACE_SCRIPT. Prints OK when all pass."""
import gzip
import json
import os
import subprocess
import sys
import tempfile

tool = sys.argv[1]


def thread(tid, name):
    return {"ph": "M", "name": "thread_name", "pid": 0, "tid": tid, "args": {"name": name}}


def op(tid, name, ts, dur):
    return {"ph": "X", "cat": "op", "name": name, "pid": 0, "tid": tid, "ts": ts, "dur": dur, "args": {}}


events = [thread(0, "frontend"), thread(4, "cuda:0/compute"), thread(5, "cuda:0/copy"),
          # compute: sum 40, 44, 42 us; add 5 us; gaps 10, 6, 2, 4 us (median 5)
          op(4, "sum", 100.0, 40.0), op(4, "add", 150.0, 5.0), op(4, "sum", 161.0, 44.0),
          op(4, "sum", 207.0, 42.0), op(4, "linear", 253.0, 100.0),
          op(5, "copy_to", 0.0, 10.0),
          # not ops: left out
          {"ph": "X", "cat": "blocker", "name": "item", "pid": 0, "tid": 0, "ts": 0.0, "dur": 500.0, "args": {}}]
failures = []
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "trace.rank0.json.gz")
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    out = subprocess.run([sys.executable, tool, "ops", path, "--track", "compute"], capture_output=True, text=True)
    lines = out.stdout.splitlines()
    want_head = "rank 0 cuda:0/compute: 5 ops, busy 231.0 us of 253.0 us (91%), median gap 5.00 us"
    if out.returncode != 0 or not lines or lines[0] != want_head:
        failures.append("head: %r (status %d, stderr %r)" % (lines[:1], out.returncode, out.stderr))
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines[2:]}
    want = {"sum": ["3", "42.000", "126.0"], "linear": ["1", "100.000", "100.0"], "add": ["1", "5.000", "5.0"]}
    if rows != want:
        failures.append("rows: %r, want %r" % (rows, want))
    if [ln.split()[0] for ln in lines[2:]] != ["sum", "linear", "add"]:
        failures.append("rows not by total time: %r" % lines[2:])
    if any("copy" in ln or "item" in ln for ln in lines):
        failures.append("another track or a non-op span shown: %r" % lines)
    # Every track, from a plain (not gzipped) copy: the copy stream's one op
    # has no gap; the frontend's span is not an op, so it has no line.
    plain = os.path.join(d, "trace.rank0.json")
    with open(plain, "w") as f:
        json.dump({"traceEvents": events}, f)
    both = subprocess.run([sys.executable, tool, "ops", plain], capture_output=True, text=True)
    if both.returncode != 0 or "rank 0 cuda:0/copy: 1 ops, busy 10.0 us of 10.0 us (100%), median gap n/a" \
            not in both.stdout or want_head not in both.stdout:
        failures.append("both tracks: %r" % both.stdout)
    if "frontend" in both.stdout or "item" in both.stdout:
        failures.append("a track of no ops, or a non-op span, shown: %r" % both.stdout)
    cut = os.path.join(d, "cut.json.gz")
    with open(path, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[:40])
    short = subprocess.run([sys.executable, tool, "ops", cut], capture_output=True, text=True)
    if short.returncode != 1 or "cut.json.gz" not in short.stderr or "Traceback" in short.stderr:
        failures.append("a file cut short: status %d, %r" % (short.returncode, short.stderr))
    none = subprocess.run([sys.executable, tool, "ops", path, "--track", "cuda:1"], capture_output=True, text=True)
    if none.returncode != 1 or "no op spans" not in none.stderr:
        failures.append("no matching track: status %d, %r" % (none.returncode, none.stderr))
    bad = subprocess.run([sys.executable, tool, "ops", os.path.join(d, "missing.json")], capture_output=True, text=True)
    if bad.returncode != 1 or "missing.json" not in bad.stderr:
        failures.append("missing file: status %d, %r" % (bad.returncode, bad.stderr))
for f in failures:
    print("FAILED:", f)
print("OK" if not failures else "%d failed" % len(failures))
sys.exit(1 if failures else 0)
