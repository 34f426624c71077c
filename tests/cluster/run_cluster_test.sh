#!/usr/bin/env bash
# tide across the namespace "nodes" of scripts/cluster.sh (ctest label
# "cluster"). Exits 77 (ctest's SKIP_RETURN_CODE), saying why, when no
# cluster of at least 2 nodes is up; scripts/test.sh brings one up first.
#
#   run_cluster_test.sh collectives TIDE_COMM_TESTS   # 2 nodes x 2 ranks, every collective test,
#                                                     # then with 2 cpu devices per rank
#   run_cluster_test.sh where WHERE_PROGRAM           # 2 nodes x 2 ranks, node-local ranks
#   run_cluster_test.sh train TRAINER WORK_DIR        # 2 nodes x 1 rank and 1 node x 2 ranks,
#                                                     # same final loss
#   run_cluster_test.sh restart TRAINER WORK_DIR      # 2 nodes x 1 rank under tiderun --max-restarts 1,
#                                                     # rank 1 killed mid-run: one restart, then the
#                                                     # parameters of an uninterrupted run
#   run_cluster_test.sh linkcut TRAINER WORK_DIR [small|default|wide]
#                                                     # 2 nodes x 1 rank, node2's link cut mid-run:
#                                                     # errors on both ranks, bounded exit, then
#                                                     # --resume ends where an uninterrupted run does
#
# Every mpirun runs under `timeout` (TIDE_CLUSTER_TEST_LIMIT seconds, default
# 60), so a hang fails the test and takes its daemons with it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cluster=$root/scripts/cluster.sh
# The limit, and the bounds below, times TIDE_TEST_TIME_SCALE (the build sets
# it, see tests/CMakeLists.txt: a sanitizer's build runs several times slower).
scale=${TIDE_TEST_TIME_SCALE:-1}
limit=$((${TIDE_CLUSTER_TEST_LIMIT:-60} * scale))

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAILED: $*"; exit 1; }
. "$here/check_where.sh"

[ $# -ge 2 ] || { echo "usage: run_cluster_test.sh collectives|where|train|restart|linkcut PROGRAM [WORK_DIR]" >&2; exit 2; }
mode=$1
prog=$2
[ -x "$prog" ] || fail "no program $prog"

status=$("$cluster" status 2>&1) || skip "no namespace cluster is up (scripts/cluster.sh up 2, as root): $status"
nodes=$(echo "$status" | grep -c ' up$' || true)
[ "$nodes" -ge 2 ] || skip "the cluster has $nodes node(s), these tests need 2"

# As root, mpirun asks to be told that it is meant. The namespace nodes share
# the machine's 2 cores, and Open MPI would bind a node's first rank to core 0
# on every node: no binding.
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export TIDE_COMM_TIMEOUT=${TIDE_COMM_TIMEOUT:-20}
launch=("$root/launch/tiderun" --rsh-agent "$("$cluster" agent)" --net "$("$cluster" net)" --bind-to none)

run() {
  echo "+ ${launch[*]} $*"
  timeout "$limit" "${launch[@]}" "$@"
}

# A field of the trainer's --json file.
field() { sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",}]*\)\"\{0,1\}.*/\1/p" "$1" | head -1; }
# The trainer on 2 nodes x 1 rank, uninterrupted, with args[@] and a
# checkpoint in $work/ref: its final loss and parameter digest in ref_loss
# and ref_digest, the runs a restart or resume must end at.
reference_run() {
  run -np 2 -H node1:1,node2:1 "$prog" "${args[@]}" --checkpoint "$work/ref" --json "$work/ref.json" >"$work/ref.log" 2>&1 ||
    fail "the uninterrupted run failed (status $?): $(tail -5 "$work/ref.log")"
  ref_loss=$(field "$work/ref.json" final_loss)
  ref_digest=$(field "$work/ref.json" params_digest)
  [ -n "$ref_loss" ] && [ -n "$ref_digest" ] || fail "no final_loss or params_digest in $work/ref.json"
  echo "uninterrupted: final loss $ref_loss, parameters $ref_digest"
}
# A run that went on from a checkpoint (LOG, JSON; WHAT: "restart" or
# "resume"): it resumed inside the run ($steps steps), its step in `from`,
# and ended at the reference run's loss and parameters, bit for bit.
check_resumed() {
  local log=$1 json=$2 what=$3 loss digest
  from=$(sed -n 's/^resuming from .* at step \([0-9]*\).*/\1/p' "$log" | head -1)
  [ -n "$from" ] && [ "$from" -gt 0 ] && [ "$from" -lt "$steps" ] ||
    fail "the run after the $what did not start from a checkpoint inside the run: $(head -3 "$log")"
  loss=$(field "$json" final_loss)
  digest=$(field "$json" params_digest)
  echo "after the $what, resumed at step $from: final loss $loss, parameters $digest"
  [ "$loss" = "$ref_loss" ] || fail "final loss $loss after the $what, $ref_loss uninterrupted"
  [ "$digest" = "$ref_digest" ] || fail "final parameters differ: $digest after the $what, $ref_digest uninterrupted"
}

case "$mode" in
  collectives)
    run -np 4 -H node1:2,node2:2 "$prog" || fail "the collective tests failed across 2 nodes (status $?)"
    # Again with 2 cpu devices per rank: the tests that need them, and groups.
    run -np 4 -H node1:2,node2:2 "$prog" --tide-cpu-devices=2 --gtest_filter='MultiDevice.*:Split.*' ||
      fail "the multi-device and group tests failed across 2 nodes (status $?)"
    echo "OK: collective tests on 2 nodes x 2 ranks, with 1 and 2 cpu devices per rank"
    ;;

  where)
    out=$(run -np 4 -H node1:2,node2:2 "$prog") || fail "the program failed (status $?): $out"
    echo "$out"
    # Lines "rank R local L/S host H netns N world W", by rank: ranks 0,1 on
    # node1 and 2,3 on node2 (mpirun fills a host's slots first), each with
    # local ranks 0,1 of 2, and one network namespace per node.
    echo "$out" | check_where || fail "node-local ranks are wrong"
    echo "OK: node-local ranks 0,1 of 2 on node1 and on node2"
    ;;

  train)
    work=${3:?"train needs a work directory"}
    mkdir -p "$work"
    # Same global batches (2 x 64 rows) and the same reduction either way.
    args=(--max-steps 60 --dtype f64 --progress lines)
    run -np 2 -H node1:1,node2:1 "$prog" "${args[@]}" --json "$work/train_2x1.json" || fail "2 nodes x 1 rank failed"
    run -np 2 -H node1:2 "$prog" "${args[@]}" --json "$work/train_1x2.json" || fail "1 node x 2 ranks failed"
    loss() { sed -n 's/.*"final_loss": *\([^,}]*\).*/\1/p' "$1" | head -1; }
    a=$(loss "$work/train_2x1.json")
    b=$(loss "$work/train_1x2.json")
    [ -n "$a" ] && [ -n "$b" ] || fail "no final_loss in the JSON files ($work)"
    echo "final loss: 2 nodes x 1 rank $a, 1 node x 2 ranks $b$([ "$a" = "$b" ] && echo " (identical)")"
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-12) }' ||
      fail "final losses differ by more than 1e-12"
    echo "OK: the same final loss on 2 nodes x 1 rank and 1 node x 2 ranks"
    ;;

  restart)
    work=${3:?"restart needs a work directory"}
    . "$here/restart.sh"
    ;;

  linkcut)
    work=${3:?"linkcut needs a work directory"}
    model=${4:-small}
    . "$here/linkcut.sh"
    ;;

  *) echo "run_cluster_test.sh: unknown mode '$mode'" >&2; exit 2 ;;
esac
