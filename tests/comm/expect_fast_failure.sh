#!/usr/bin/env bash
# Runs a command that must fail (non-zero, not by our timeout) within LIMIT
# seconds (times TIDE_TEST_TIME_SCALE, which the build sets: see
# tests/CMakeLists.txt). Usage: expect_fast_failure.sh LIMIT COMMAND...
limit=$(($1 * ${TIDE_TEST_TIME_SCALE:-1})); shift
start_ns=$(date +%s%N)
timeout "$((limit * 2))" "$@" >/dev/null 2>&1
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
echo "exit status $rc after ${elapsed_ms} ms (limit ${limit} s)"
if [ "$rc" -eq 0 ]; then echo "FAILED: the job succeeded"; exit 1; fi
if [ "$rc" -eq 124 ]; then echo "FAILED: the job hung"; exit 1; fi
if [ "$elapsed_ms" -gt $((limit * 1000)) ]; then echo "FAILED: too slow"; exit 1; fi
echo "OK"
