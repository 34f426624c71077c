#!/usr/bin/env bash
# tiderun with --abort-timeout, sent SIGINT (a Ctrl-C) while its ranks run:
# the job must end promptly (within 10 s; the ranks would sleep 60 s) with a
# non-zero status.
# Usage: tiderun_interrupt.sh TIDERUN
tiderun=$1
# Job control: a background job then keeps SIGINT (a script's background
# jobs ignore it otherwise, and so could not be interrupted at all), and
# gets a process group of its own to clean up.
set -m
"$tiderun" -np 2 --local --abort-timeout 5 -- sleep 60 &
pid=$!
# If it did not end: its group, mpirun and the ranks (in groups of their own).
cleanup() {
  kill -0 "$pid" 2>/dev/null || return
  local ranks
  ranks=$(pgrep -P "$mpirun_pid")
  kill -KILL -- "-$pid" $ranks 2>/dev/null
}
trap cleanup EXIT
# Wait for mpirun to be running under tiderun (its traps are set by then).
for _ in $(seq 200); do
  pgrep -P "$pid" -x mpirun >/dev/null && break
  sleep 0.1
done
mpirun_pid=$(pgrep -P "$pid" -x mpirun) || { echo "FAILED: mpirun did not start"; exit 1; }
sleep 1
start_ns=$(date +%s%N)
kill -INT "$pid"
for _ in $(seq 100); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then echo "FAILED: tiderun still runs 10 s after SIGINT"; exit 1; fi
wait "$pid"
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
echo "tiderun exited with status $rc ${elapsed_ms} ms after SIGINT"
if [ "$rc" -eq 0 ]; then echo "FAILED: the interrupted job exited 0"; exit 1; fi
echo "OK: interrupted promptly"
