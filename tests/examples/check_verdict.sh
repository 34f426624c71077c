#!/bin/bash
# usage: check_verdict.sh BENCHMARK [ARGS...]
# Runs a benchmark with --check and checks that its exit status agrees with
# its verdict line: 0 when every target it names is met, 3 when one is
# MISSED. Prints "OK: ..." when they agree.
set -u
out=$("$@" --check 2>&1)
status=$?
verdict=$(grep '^verdict:' <<< "$out")
[ -n "$verdict" ] || { echo "FAILED: no verdict line (status $status):"; echo "$out"; exit 1; }
if grep -q 'MISSED' <<< "$verdict"; then want=3; else want=0; fi
[ "$status" -eq "$want" ] || { echo "FAILED: status $status, expected $want for: $verdict"; exit 1; }
echo "OK: status $status for: $verdict"
