#!/usr/bin/env bash
# tiderun with --abort-timeout, sent SIGINT (a Ctrl-C) while its ranks run:
# the job must end promptly (within 10 s times TIDE_TEST_TIME_SCALE; the
# ranks would sleep 60 s) with a non-zero status.
# Usage: tiderun_interrupt.sh TIDERUN [job|background]
#   job         started as a job of its own (job control): SIGINT reaches it
#               as from a terminal
#   background  started as `tiderun ... &` in a script, which starts it with
#               SIGINT ignored: tiderun must act on it all the same
tiderun=$1
how=${2:-job}
limit_s=$((10 * ${TIDE_TEST_TIME_SCALE:-1}))
if [ "$how" = job ]; then
  # Job control: the job gets a process group of its own to clean up.
  set -m
fi
"$tiderun" -np 2 --local --abort-timeout 5 -- sleep 60 &
pid=$!
if [ "$how" = background ]; then
  ignored=$(awk '/^SigIgn:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
  echo "tiderun started with SigIgn $ignored (SIGINT is bit 2)"
fi
# If it did not end: its group, mpirun and the ranks (in groups of their own).
cleanup() {
  kill -0 "$pid" 2>/dev/null || return
  local ranks
  ranks=$(pgrep -P "$mpirun_pid")
  kill -KILL -- "-$pid" "$pid" "$mpirun_pid" $ranks 2>/dev/null
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
for _ in $(seq $((limit_s * 10))); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then echo "FAILED: tiderun still runs $limit_s s after SIGINT ($how)"; exit 1; fi
wait "$pid"
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
echo "tiderun exited with status $rc ${elapsed_ms} ms after SIGINT ($how)"
if [ "$rc" -eq 0 ]; then echo "FAILED: the interrupted job exited 0"; exit 1; fi
echo "OK: interrupted promptly"
