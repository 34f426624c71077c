#!/usr/bin/env bash
# Runs a job that must fail: non-zero, not by our timeout, within LIMIT
# seconds, its output matching PATTERN (grep -E), and no rank printing
# "finished normally". Prints the job's output, then the verdict.
# LIMIT is multiplied by TIDE_TEST_TIME_SCALE (the build sets it: see
# tests/CMakeLists.txt).
# Usage: expect_job_failure.sh LIMIT PATTERN COMMAND...
limit=$(($1 * ${TIDE_TEST_TIME_SCALE:-1}))
pattern=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start_ns=$(date +%s%N)
timeout "$((limit * 4))" "$@" >"$out" 2>&1
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
cat "$out"
echo "exit status $rc after ${elapsed_ms} ms (limit ${limit} s)"
if [ "$rc" -eq 0 ]; then echo "FAILED: the job succeeded"; exit 1; fi
if [ "$rc" -eq 124 ]; then echo "FAILED: the job hung"; exit 1; fi
if [ "$elapsed_ms" -gt $((limit * 1000)) ]; then echo "FAILED: too slow"; exit 1; fi
if ! grep -Eq "$pattern" "$out"; then echo "FAILED: no line matches '$pattern'"; exit 1; fi
if grep -q "finished normally" "$out"; then echo "FAILED: a rank finished normally"; exit 1; fi
echo "OK: failed promptly"
