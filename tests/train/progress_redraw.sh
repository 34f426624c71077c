#!/bin/bash
# usage: progress_redraw.sh TRAINER
# The redrawn progress line fits the terminal: with COLUMNS=60 (stdout is no
# terminal here, so the trainer falls back to $COLUMNS) every redraw is at
# most 59 characters, starts with a carriage return and erases to the end
# of the line, shows the elapsed time and an ETA, and the last one ends the
# line. Prints "OK: ..." when all hold.
set -u
trainer=$1
out=$(COLUMNS=60 "$trainer" --progress redraw --max-steps 30 --log-every 10 2>&1) ||
  { echo "FAILED: the trainer failed:"; echo "$out"; exit 1; }
python3 - "$out" <<'PY' || exit 1
import re, sys
out = sys.argv[1]
parts = out.split("\r")[1:]  # each redraw starts with \r
if len(parts) < 3:
    sys.exit(f"FAILED: {len(parts)} redraws, expected 3:\n{out!r}")
for p in parts:
    line = p.split("\n")[0]
    if not line.endswith("\x1b[K"):
        sys.exit(f"FAILED: a redraw does not erase to the end of the line: {line!r}")
    text = line[:-3]
    if len(text) > 59:
        sys.exit(f"FAILED: a redraw of {len(text)} characters in 60 columns: {text!r}")
    if not re.search(r"step \d+/30", text):
        sys.exit(f"FAILED: no step in {text!r}")
if "ETA" not in parts[0]:
    sys.exit(f"FAILED: no ETA in {parts[0]!r}")
if "\n" not in parts[-1]:
    sys.exit("FAILED: the last redraw does not end the line")
print(f"OK: {len(parts)} redraws within 59 columns, with ETA")
PY
