#!/bin/bash
# usage: trace_merge.sh WORK_DIR SOURCE_DIR TRAINER
# The merged timeline, end to end: launch/tiderun --trace runs the trainer on
# 2 ranks and merges their files; a second run has its rank 1 killed
# (SIGKILL) once both ranks have written their start; check_merge.py then
# checks the merge (clock alignment, a skewed clock undone, the killed run).
# Prints "OK: ..." when all pass.
set -u
work=$1 src=$2 trainer=$3
rm -rf "$work"
mkdir -p "$work"
command -v python3 > /dev/null || { echo "FAILED: python3 is needed (scripts/setup.sh installs it)"; exit 1; }

if ! "$src/launch/tiderun" -np 2 --local --trace "$work/run" "$trainer" --max-steps 40 --log-every 10 \
    > "$work/run.log" 2>&1; then
  echo "FAILED: tiderun --trace exited non-zero:"; cat "$work/run.log"; exit 1
fi
grep -q "tide-trace: wrote $work/run/trace.json (2 ranks of 2)" "$work/run.log" ||
  { echo "FAILED: tiderun did not merge the files:"; cat "$work/run.log"; exit 1; }

# The killed run: endless (epochs and steps), so that it is still training
# when rank 1 goes, however fast the trainer is.
TIDE_TRACE="$work/killed" mpirun -np 2 --oversubscribe $([ "$(id -u)" -eq 0 ] && echo --allow-run-as-root) \
  "$trainer" --epochs 1000000 --max-steps 100000000 --log-every 1000 > "$work/killed.log" 2>&1 &
job=$!
rank1=""
for _ in $(seq 1 600); do
  if [ -s "$work/killed/trace.rank0.json" ] && [ -s "$work/killed/trace.rank1.json" ]; then
    for p in $(pgrep -f "$trainer"); do
      env=$(tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null) || continue
      # This run's rank 1, not another test's trainer.
      if grep -qx "OMPI_COMM_WORLD_RANK=1" <<< "$env" && grep -qxF "TIDE_TRACE=$work/killed" <<< "$env"; then
        rank1=$p
      fi
    done
    [ -n "$rank1" ] && break
  fi
  sleep 0.1
done
[ -n "$rank1" ] || { kill "$job" 2>/dev/null; echo "FAILED: the second run's rank 1 never started tracing"; cat "$work/killed.log"; exit 1; }
sleep 1
kill -KILL "$rank1"
wait "$job" 2>/dev/null
python3 "$src/tests/launch/check_merge.py" "$src/launch/tide-trace" "$work/run" "$work/killed" "$work"
