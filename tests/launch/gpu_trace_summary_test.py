#!/usr/bin/env python3
"""gpu_summary.py --check-trace on made-up traces: it accepts GPU spans that
never overlap on a stream with a clock report, and refuses an overlap, a
trace without GPU spans and one without a usable clock."""
import json
import os
import subprocess
import sys
import tempfile

script = sys.argv[1]


def trace(spans, clocks):
    ev = [{"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "cpu:0/compute"}},
          {"ph": "M", "name": "thread_name", "pid": 0, "tid": 5, "args": {"name": "cuda:0/compute"}},
          {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "cuda:0/comm"}},
          {"ph": "X", "cat": "op", "name": "host", "pid": 0, "tid": 1, "ts": 0.0, "dur": 100.0}]
    for tid, ts, dur in spans:
        ev.append({"ph": "X", "cat": "op", "name": "add", "pid": 0, "tid": tid, "ts": ts, "dur": dur})
    d = {"displayTimeUnit": "ns", "traceEvents": ev}
    if clocks is not None:
        d["tide_gpu_clocks"] = clocks
    return d


def check(d):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(d, f)
    try:
        r = subprocess.run([sys.executable, script, "--check-trace", f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    return r.returncode, json.loads(r.stdout)


clock = [{"device": "cuda:0", "anchors": 3, "readings_used": 3, "readings_ignored": 0,
          "last_residual_ns": 800, "max_residual_ns": 1500}]
good = [(5, 10.0, 5.0), (5, 15.0, 5.0), (7, 12.0, 30.0), (5, 20.5, 1.25)]
failures = []
rc, r = check(trace(good, clock))
if rc != 0 or r["gpu_spans"] != 4 or r["overlapping_spans"] != 0 or r["tracks"] != ["cuda:0/comm", "cuda:0/compute"]:
    failures.append(f"good trace: rc {rc}, {r}")
rc, r = check(trace(good + [(5, 24.0, 10.0), (5, 30.0, 1.0)], clock))
if rc != 1 or r["overlapping_spans"] != 1:
    failures.append(f"an overlap on cuda:0/compute: rc {rc}, {r}")
rc, r = check(trace([], clock))
if rc != 1 or r["gpu_spans"] != 0:
    failures.append(f"no GPU spans: rc {rc}, {r}")
rc, r = check(trace(good, None))
if rc != 1:
    failures.append(f"no clock report: rc {rc}, {r}")
rc, r = check(trace(good, [dict(clock[0], readings_used=0)]))
if rc != 1:
    failures.append(f"a clock that used no reading: rc {rc}, {r}")
for f in failures:
    print("FAIL:", f)
print("OK" if not failures else f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
