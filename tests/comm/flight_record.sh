#!/bin/bash
# usage: flight_record.sh DIR TIDE_TRACE_TOOL COMMAND...
# COMMAND is the 3-rank timeout test (rank 0 times out in all_reduce #2 of
# the world, which rank 1, asleep, and rank 2, in its group's all-reduce,
# never join), run with TIDE_FLIGHT_DIR=DIR. Every rank must leave its
# flight record (rank 0 when its collective fails, ranks 1 and 2 when the
# abort's SIGTERM reaches them), and tide-trace flight must name ranks 1 and
# 2 as behind, at split #1, with rank 0 in all_reduce #2. Prints "OK: ...".
set -u
dir=$1 tool=$2
shift 2
rm -rf "$dir"
mkdir -p "$dir"
TIDE_FLIGHT_DIR=$dir "$@" > "$dir/job.log" 2>&1
grep -q "tide-timeout-test: OK" "$dir/job.log" || { echo "FAILED: the timeout test did not pass:"; cat "$dir/job.log"; exit 1; }
for r in 0 1 2; do
  [ -s "$dir/flight.rank$r.json" ] || { echo "FAILED: no flight record from rank $r"; ls -l "$dir"; cat "$dir/job.log"; exit 1; }
done
"$tool" flight "$dir" > "$dir/flight.txt" 2>&1 || { echo "FAILED: tide-trace flight:"; cat "$dir/flight.txt"; exit 1; }
for want in "rank 0: all_reduce #2 (16 x f32, sum, 3 ranks) timed out" \
            "  in all_reduce #2 of the world (16 x f32, sum) for" \
            "rank 1: ended by the launcher (SIGTERM)" \
            "behind: rank 1: its last collective is split #1 of the world; rank 0 reached all_reduce #2 of the world" \
            "behind: rank 2: its last collective is split #1 of the world; rank 0 reached all_reduce #2 of the world" \
            "  cpu:0/comm: running all_reduce for"; do
  grep -qF -- "$want" "$dir/flight.txt" || { echo "FAILED: tide-trace flight did not say: $want"; cat "$dir/flight.txt"; exit 1; }
done
echo "OK: 3 flight records; $(grep -c '^behind' "$dir/flight.txt") ranks named behind"
