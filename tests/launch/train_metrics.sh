#!/bin/bash
# usage: train_metrics.sh WORK_DIR COMMAND...
# Runs COMMAND (the 2-rank trainer, 40 steps, a log line every 10) with
# --metrics WORK_DIR/metrics.jsonl --trace WORK_DIR/trace and checks both:
# four JSON lines with every field (the bucket communication's time and its
# hidden share measured), and a trace file per rank. Prints "OK: ...".
set -u
work=$1
shift
rm -rf "$work"
mkdir -p "$work"
if ! "$@" --metrics "$work/metrics.jsonl" --trace "$work/trace" > "$work/log" 2>&1; then
  echo "FAILED: the trainer exited non-zero:"; cat "$work/log"; exit 1
fi
for r in 0 1; do
  grep -q '"traceEvents":\[' "$work/trace/trace.rank$r.json" 2>/dev/null && grep -q '"complete":true' "$work/trace/trace.rank$r.json" ||
    { echo "FAILED: no complete $work/trace/trace.rank$r.json"; ls -l "$work/trace"; exit 1; }
done
python3 - "$work/metrics.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
want = ["step", "epoch", "loss", "accuracy", "samples_per_s", "interval_s", "stalls", "stall_ms", "blockers",
        "blocked_ms", "queued_bytes", "peak_queued_bytes", "comm_steps", "comm_ms", "comm_hidden_ms",
        "comm_hidden_fraction"]
if [m["step"] for m in lines] != [10, 20, 30, 40]:
    sys.exit("FAILED: metrics lines at steps %s, wanted 10, 20, 30, 40" % [m["step"] for m in lines])
for m in lines:
    missing = [k for k in want if k not in m]
    if missing:
        sys.exit("FAILED: step %d lacks %s" % (m["step"], missing))
    if not (m["loss"] > 0 and 0 <= m["accuracy"] <= 1 and m["samples_per_s"] > 0 and m["blockers"] >= 1):
        sys.exit("FAILED: implausible figures: %s" % m)
    # Each line covers the steps whose backward is complete: 9 or 10 of them.
    if not 9 <= m["comm_steps"] <= 10 or not m["comm_ms"] > 0 or not 0 <= m["comm_hidden_ms"] <= m["comm_ms"]:
        sys.exit("FAILED: communication figures: %s" % m)
print("OK: 4 metrics lines; comm %.3f ms over %d steps in the last, %.0f%% hidden; 2 trace files"
      % (lines[-1]["comm_ms"], lines[-1]["comm_steps"], 100 * lines[-1]["comm_hidden_fraction"]))
PY
