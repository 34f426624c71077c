#!/bin/bash
# usage: progress_tmux.sh TRAINER
# The trainer in a real terminal of 80 columns (a detached tmux session of
# its own): at its default --progress (auto), the progress line is redrawn in
# place, so the screen shows one "step N/200" line while it runs and after
# it ends, never a line per update or a line wrapped onto the next row; the
# header and summary are broken to the width, so no row of theirs wraps.
# Prints "OK: ..." when that holds; exits 77 (skip) without tmux.
set -u
trainer=$1
command -v tmux >/dev/null || { echo "SKIP: no tmux (scripts/setup.sh installs it)"; exit 77; }
sock=tide-progress-$$
tm() { tmux -L "$sock" "$@"; }
trap 'tm kill-server 2>/dev/null || true' EXIT
export TERM=${TERM:-xterm}
[ "$TERM" = dumb ] && export TERM=xterm
# COLUMNS unset: the width comes from the terminal itself.
tm new-session -d -x 80 -y 40 -s progress \
  "env -u COLUMNS $trainer --max-steps 200 --log-every 10; echo TRAINER-EXIT-\$?; sleep 60" ||
  { echo "FAILED: tmux could not start a session"; exit 1; }
tm resize-window -t progress -x 80 -y 40 2>/dev/null || true
check_screen() {  # check_screen WHEN: one step line, no wrapped row
  local screen=$1 when=$2 n
  n=$(grep -cE 'step [0-9]+/200' <<< "$screen" || true)
  if [ "$n" -ne 1 ]; then
    echo "FAILED: $n progress lines on the 80-column screen $when:"; echo "$screen"; exit 1
  fi
  # A line longer than the terminal would have wrapped: the row after the
  # progress line would hold its rest.
  local row
  row=$(grep -E 'step [0-9]+/200' <<< "$screen")
  if [ "${#row}" -gt 80 ]; then echo "FAILED: a row of ${#row} characters: $row"; exit 1; fi
}
seen_running=0
for _ in $(seq 600); do
  screen=$(tm capture-pane -p -t progress 2>/dev/null) || { echo "FAILED: the tmux session ended early"; exit 1; }
  if grep -q 'TRAINER-EXIT-' <<< "$screen"; then break; fi
  if grep -qE 'step [0-9]+/200' <<< "$screen"; then
    check_screen "$screen" "while it ran"
    seen_running=$((seen_running + 1))
  fi
  sleep 0.1
done
grep -q 'TRAINER-EXIT-0' <<< "$screen" || { echo "FAILED: the trainer did not end, or failed:"; echo "$screen"; exit 1; }
check_screen "$screen" "after it ended"
grep -qE 'step 200/200' <<< "$screen" || { echo "FAILED: the last redraw is not step 200/200:"; echo "$screen"; exit 1; }
# The header and the summary are broken to the terminal's width too: a row
# of all 80 columns is a line the terminal wrapped.
long=$(sed -n '1,/TRAINER-EXIT/p' <<< "$screen" | awk 'length($0) >= 80')
[ -z "$long" ] || { echo "FAILED: rows the terminal wrapped:"; echo "$screen"; exit 1; }
echo "$screen" | sed -n '1,/TRAINER-EXIT/p'
echo "OK: one redrawn progress line on an 80-column tmux screen ($seen_running looks while it ran, and at the end)"
