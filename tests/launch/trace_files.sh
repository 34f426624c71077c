#!/bin/bash
# usage: trace_files.sh DIR NP COMMAND...
# Runs COMMAND with TIDE_TRACE=DIR and checks that each of the NP ranks wrote
# DIR/trace.rank<R>.json with its process name, the comm stream's track,
# op spans, step markers and blockers; prints "OK: ..." when all are there.
set -u
dir=$1 np=$2
shift 2
rm -rf "$dir"
if ! TIDE_TRACE=$dir "$@" > "$dir.log" 2>&1; then
  echo "FAILED: the command exited non-zero:"; cat "$dir.log"; exit 1
fi
for ((r = 0; r < np; r++)); do
  f=$dir/trace.rank$r.json
  [ -s "$f" ] || { echo "FAILED: no $f"; ls -l "$dir"; exit 1; }
  for want in "\"args\":{\"name\":\"rank $r\"}" '"args":{"name":"cpu:0/comm"}' '"cat":"op","name":"all_reduce"' \
              '"cat":"step"' '"cat":"blocker"' '"ph":"s"'; do
    grep -qF "$want" "$f" || { echo "FAILED: $f lacks $want"; exit 1; }
  done
  if command -v python3 > /dev/null; then
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$f" || { echo "FAILED: $f is not JSON"; exit 1; }
  fi
done
echo "OK: $np trace files, $(cat "$dir"/trace.rank*.json | grep -c '"cat":"op"') op spans"
