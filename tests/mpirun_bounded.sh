#!/usr/bin/env bash
# The tests' mpirun: runs "$@" (mpirun and its arguments) and returns its
# status, except when mpirun outlives every process it started.
#
# Open MPI 4.1.4's mpirun can hang (or crash) in its own teardown
# (PMIx_server_finalize) after a rank called MPI_Abort, when every rank has
# already ended: its ranks' output is complete, yet it never exits. A test
# would then wait for its whole ctest TIMEOUT and fail on what is not its
# subject. So once mpirun has had no live child process (its ranks, or the
# daemons of other hosts) for TIDE_TEST_MPIRUN_GRACE seconds (default 20),
# it is killed with SIGKILL, this script says so on stderr and exits 3. A
# test that looks at the status sees a failure; one that looks at the output
# judges the output.
set -u
grace=${TIDE_TEST_MPIRUN_GRACE:-20}
[[ "$grace" =~ ^[0-9]+$ ]] || { echo "mpirun_bounded.sh: TIDE_TEST_MPIRUN_GRACE must be whole seconds" >&2; exit 2; }

"$@" &
pid=$!
# SIGTERM, SIGINT, SIGHUP to this script go to mpirun, which passes them to the ranks.
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT HUP

killed=$(mktemp "${TMPDIR:-/tmp}/mpirun-bounded.XXXXXX")
rm -f "$killed"
(
  idle=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    # A child that is not a zombie is a rank or daemon still running.
    if ps -o stat= --ppid "$pid" 2>/dev/null | grep -qv '^Z'; then idle=0; else idle=$((idle + 1)); fi
    if [ "$idle" -ge "$grace" ]; then
      echo "mpirun_bounded.sh: every process mpirun started ended ${grace} s ago and mpirun has not exited" \
        "(a hang in Open MPI's own teardown): killing it" >&2
      : >"$killed"
      kill -KILL "$pid" 2>/dev/null
      exit 0
    fi
  done
) &
dog=$!

status=0
while :; do
  wait "$pid"
  status=$?
  # wait returns early when a trapped signal arrives: wait again while mpirun runs.
  kill -0 "$pid" 2>/dev/null || break
done
kill "$dog" 2>/dev/null
wait "$dog" 2>/dev/null
if [ -e "$killed" ]; then
  rm -f "$killed"
  exit 3
fi
exit "$status"
