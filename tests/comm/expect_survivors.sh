#!/usr/bin/env bash
# Runs a job in which one rank dies: it must end non-zero, not by our
# timeout, within LIMIT seconds, and every other rank must print a line
# matching "tide: rank R: .*PATTERN" (grep -E), where R is that rank.
# Prints the job's output, then the verdict.
# Usage: expect_survivors.sh LIMIT NP VICTIM PATTERN COMMAND...
# LIMIT is multiplied by TIDE_TEST_TIME_SCALE (the build sets it: see
# tests/CMakeLists.txt).
limit=$(($1 * ${TIDE_TEST_TIME_SCALE:-1})) np=$2 victim=$3 pattern=$4
shift 4
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
for ((r = 0; r < np; ++r)); do
  [ "$r" -eq "$victim" ] && continue
  if ! grep -Eq "tide: rank $r: .*$pattern" "$out"; then
    echo "FAILED: rank $r printed no line matching 'tide: rank $r: .*$pattern'"; exit 1
  fi
done
if grep -q "finished normally" "$out"; then echo "FAILED: a rank finished normally"; exit 1; fi
echo "OK: every survivor named it, in ${elapsed_ms} ms"
