#!/usr/bin/env bash
# Runs a job that must succeed: exit status 0 and a line matching each
# PATTERN (grep -E). Prints the job's output, then the verdict.
# Usage: expect_clean_run.sh PATTERN... -- COMMAND...
patterns=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do patterns+=("$1"); shift; done
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" -ne 0 ]; then echo "FAILED: exit status $rc"; exit 1; fi
for p in "${patterns[@]}"; do
  if ! grep -Eq -- "$p" "$out"; then echo "FAILED: no line matches '$p'"; exit 1; fi
done
echo "OK: ran cleanly"
