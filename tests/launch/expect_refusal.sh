#!/usr/bin/env bash
# Runs a command that must be refused at once: exit status STATUS within 20
# seconds, its output matching PATTERN (grep -E). Prints the output, then
# the verdict.
# Usage: expect_refusal.sh STATUS PATTERN COMMAND...
want=$1
pattern=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
timeout 20 "$@" >"$out" 2>&1
rc=$?
cat "$out"
echo "exit status $rc"
if [ "$rc" -eq 124 ]; then echo "FAILED: it hung"; exit 1; fi
if [ "$rc" -ne "$want" ]; then echo "FAILED: expected exit status $want"; exit 1; fi
if ! grep -Eq -- "$pattern" "$out"; then echo "FAILED: no line matches '$pattern'"; exit 1; fi
echo "OK: refused"
