#!/usr/bin/env python3
"""Checks of launch/tide-trace merge, on the trace files of a real 2-rank run.

usage: check_merge.py TIDE_TRACE_TOOL RUN_DIR KILLED_DIR WORK_DIR

RUN_DIR holds the files of a run that ended normally (and its merge,
trace.json, made by tiderun --trace); KILLED_DIR those of a run whose rank 1
was killed (SIGKILL) mid-run. Prints "OK: ..." when every check passes.

1. The merged file holds both ranks, complete, with their comm spans; and
   on the merged clock every all-reduce overlaps itself across ranks (no
   rank can finish an all-reduce before every rank has begun it), within
   the error bound the merge states.
2. Rank 1's file rewritten as if its clock ran 3.7 s ahead and 80 ppm fast
   (every timestamp and its clock samples, as another host's clock would
   read) merges to the same times, within 0.05 us; merged without the clock
   correction, the overlap check of 1 fails (so that check can fail).
3. The killed run's files (written at start, never completed) merge, with
   each rank reported incomplete; rank 0's complete file beside the killed
   rank 1's merges too, with rank 0's spans.
"""
import copy
import json
import os
import shutil
import subprocess
import sys

tool, run_dir, killed_dir, work = sys.argv[1:5]


def die(msg):
    print("FAILED: " + msg)
    sys.exit(1)


def load(path):
    with open(path) as f:
        return json.load(f)


def merge(directory):
    p = subprocess.run([tool, "merge", directory], capture_output=True, text=True)
    if p.returncode != 0:
        die("tide-trace merge %s exited %d: %s" % (directory, p.returncode, p.stderr))
    return load(os.path.join(directory, "trace.json")), p.stderr + p.stdout


def all_reduces(trace):
    """Per rank, the all-reduce spans on the comm track, in order: (start, end) in us."""
    comm_tid = {}
    for ev in trace["traceEvents"]:
        if ev.get("ph") == "M" and ev.get("name") == "thread_name" and ev["args"]["name"].endswith("/comm"):
            comm_tid[ev["pid"]] = ev["tid"]
    spans = {}
    for ev in trace["traceEvents"]:
        if ev.get("ph") == "X" and ev.get("name") == "all_reduce" and comm_tid.get(ev["pid"]) == ev["tid"]:
            spans.setdefault(ev["pid"], []).append((ev["ts"], ev["ts"] + ev["dur"]))
    for v in spans.values():
        v.sort()
    return spans


def worst_overlap_gap(trace, tolerance_us):
    """The largest amount (us) by which an all-reduce ends on one rank before it begins on the other."""
    spans = all_reduces(trace)
    if sorted(spans) != [0, 1]:
        die("all-reduce spans on the comm track of ranks %s, wanted 0 and 1" % sorted(spans))
    if len(spans[0]) != len(spans[1]) or not spans[0]:
        die("ranks ran %d and %d all-reduces" % (len(spans[0]), len(spans[1])))
    worst = 0.0
    for (a0, a1), (b0, b1) in zip(spans[0], spans[1]):
        worst = max(worst, max(a0, b0) - min(a1, b1) - tolerance_us)
    return worst, len(spans[0])


# ---- 1. the normal run, merged by tiderun --trace
merged = load(os.path.join(run_dir, "trace.json"))
ranks = merged["tide"]["ranks"]
if [r["rank"] for r in ranks] != [0, 1] or not all(r["complete"] for r in ranks):
    die("the merged file's ranks: %s" % ranks)
error_us = max(r["error_ns"] for r in ranks) / 1e3
if ranks[0]["error_ns"] != 0 or ranks[0]["offset_ns"] != 0:
    die("rank 0 is the reference clock, yet its offset is %s" % ranks[0])
gap, pairs = worst_overlap_gap(merged, error_us + 0.002)
if gap > 0:
    die("after the merge, an all-reduce ends on one rank %.3f us before it begins on the other "
        "(beyond the stated error of %.3f us)" % (gap, error_us))

# ---- 2. rank 1's clock 3.7 s ahead and 80 ppm fast
skew = os.path.join(work, "skewed")
shutil.rmtree(skew, ignore_errors=True)
os.makedirs(skew)
shutil.copy(os.path.join(run_dir, "trace.rank0.json"), skew)
r1 = load(os.path.join(run_dir, "trace.rank1.json"))
D_ns, rate = 3_700_000_000, 1 + 80e-6
for ev in r1["traceEvents"]:
    if "ts" in ev:
        end = ev["ts"] + ev.get("dur", 0)
        ev["ts"] = ev["ts"] * rate + D_ns / 1e3
        if "dur" in ev:
            ev["dur"] = end * rate + D_ns / 1e3 - ev["ts"]
for c in r1["tide"]["clock"].values():
    local = c["local_ns"] * rate + D_ns
    c["offset_ns"] = int(round(c["local_ns"] + c["offset_ns"] - local))
    c["local_ns"] = int(round(local))
with open(os.path.join(skew, "trace.rank1.json"), "w") as f:
    json.dump(r1, f)
plain, _ = merge(run_dir)
skewed, _ = merge(skew)
a = [ev for ev in plain["traceEvents"] if "ts" in ev]
b = [ev for ev in skewed["traceEvents"] if "ts" in ev]
if len(a) != len(b):
    die("the skewed merge has %d timed events, the plain one %d" % (len(b), len(a)))
worst = max(abs(x["ts"] - y["ts"]) for x, y in zip(a, b))
if worst > 0.05:
    die("with rank 1's clock skewed, the merge moved an event by %.3f us" % worst)
# Rank 0's clock runs 1/rate as fast as the skewed one: the drift measured
# on the real run, compounded with that.
drift = skewed["tide"]["ranks"][1]["drift_ppm"]
want = ((1 + plain["tide"]["ranks"][1]["drift_ppm"] * 1e-6) / rate - 1) * 1e6
if abs(drift - want) > 0.01:
    die("the skewed merge measured a drift of %.3f ppm, wanted %.3f" % (drift, want))
naive = copy.deepcopy(skewed)
naive["traceEvents"] = [dict(ev) for ev in plain["traceEvents"]]
for ev, raw in zip([ev for ev in naive["traceEvents"] if ev.get("pid") == 1 and "ts" in ev],
                   [ev for ev in r1["traceEvents"] if "ts" in ev]):
    ev["ts"], ev["dur"] = raw["ts"] - plain["tide"]["origin_us"], raw.get("dur", 0)
naive_gap, _ = worst_overlap_gap(naive, error_us + 0.002)
if naive_gap <= 0:
    die("without the clock correction the overlap check still passed: it cannot tell")

# ---- 3. a rank killed mid-run
dead, msgs = merge(killed_dir)
if not all(not r["complete"] for r in dead["tide"]["ranks"]) or len(dead["tide"]["ranks"]) != 2:
    die("the killed run's merge: %s" % dead["tide"]["ranks"])
if "rank 1: its trace stops at its start" not in msgs:
    die("the killed run's merge did not say rank 1 is incomplete: %s" % msgs)
mixed = os.path.join(work, "mixed")
shutil.rmtree(mixed, ignore_errors=True)
os.makedirs(mixed)
shutil.copy(os.path.join(run_dir, "trace.rank0.json"), mixed)
shutil.copy(os.path.join(killed_dir, "trace.rank1.json"), mixed)
mix, msgs = merge(mixed)
info = {r["rank"]: r for r in mix["tide"]["ranks"]}
if not info[0]["complete"] or info[0]["spans"] == 0 or info[1]["complete"]:
    die("rank 0 complete beside a killed rank 1 merged as %s" % mix["tide"]["ranks"])

print("OK: %d all-reduce pairs overlap on the merged clock (error bound %.1f us, rank 1 offset %+.1f us); "
      "a 3.7 s, 80 ppm skew undone within %.3f us (uncorrected: %.0f us off); a killed rank merges"
      % (pairs, error_us, ranks[1]["offset_ns"] / 1e3, worst, naive_gap))
