#!/bin/sh
# Runs PROGRAM [ARGS...] as a rank of a tiderun job; in the job's first
# attempt (TIDE_RESTART_COUNT 0), on rank TIDE_TEST_KILL_RANK (default 1),
# kills it with SIGKILL TIDE_TEST_KILL_DELAY seconds (default 0.1) after the
# file TIDE_TEST_KILL_AFTER exists, as a machine failure would, mid-step.
# Any other rank, or a later attempt, is the program itself.
if [ "${TIDE_RESTART_COUNT:-0}" != 0 ] || [ "${RANK:-}" != "${TIDE_TEST_KILL_RANK:-1}" ]; then
  exec "$@"
fi
: "${TIDE_TEST_KILL_AFTER:?kill_once.sh needs TIDE_TEST_KILL_AFTER, a file to wait for}"
"$@" &
pid=$!
while kill -0 "$pid" 2>/dev/null && ! [ -e "$TIDE_TEST_KILL_AFTER" ]; do sleep 0.05; done
sleep "${TIDE_TEST_KILL_DELAY:-0.1}"
kill -KILL "$pid" 2>/dev/null
wait "$pid"
