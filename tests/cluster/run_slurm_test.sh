#!/usr/bin/env bash
# tide under a real Slurm (scripts/slurm.sh) on the namespace nodes of
# scripts/cluster.sh (ctest label "cluster"). Exits 77 (ctest's
# SKIP_RETURN_CODE), saying why, when no Slurm is up (scripts/test.sh brings
# one up after the cluster); a Slurm that is up but whose nodes are not ready
# within 60 s fails the test.
#
#   run_slurm_test.sh where WHERE_PROGRAM          # srun -N 2 -n 4: ranks, node-local ranks and
#                                                  # hosts as mpirun gives them; tide-rank's
#                                                  # torchrun variables from a 2+1 step; srun
#                                                  # without PMIx refused; tiderun in an
#                                                  # allocation puts 2 ranks on each node
#   run_slurm_test.sh train TRAINER WORK_DIR       # srun -N 2 -n 4, sbatch of
#                                                  # examples/slurm/train.sbatch and tiderun
#                                                  # inside an allocation: the loss of mpirun
#   run_slurm_test.sh cancel TRAINER WORK_DIR      # scancel of a running batch job: every rank
#                                                  # reports SIGTERM and leaves its flight record
#   run_slurm_test.sh killed KILL_PROGRAM          # a rank killed (SIGKILL) under srun
#                                                  # --kill-on-bad-exit: Slurm ends the others,
#                                                  # each names the vanished rank
#
# Every command runs under `timeout` (TIDE_CLUSTER_TEST_LIMIT seconds,
# default 60), so a hang fails the test.
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

[ $# -ge 2 ] || { echo "usage: run_slurm_test.sh where|train|cancel|killed PROGRAM [WORK_DIR]" >&2; exit 2; }
mode=$1
prog=$2
[ -x "$prog" ] || fail "no program $prog"

export SLURM_CONF
SLURM_CONF=$("$root/scripts/slurm.sh" conf)
[ -r "$SLURM_CONF" ] || skip "no Slurm is up (scripts/slurm.sh up, after scripts/cluster.sh up 2)"
# A Slurm that is up must answer: its nodes may still be completing the last
# test's job, or be back from a cut link within a ping (SlurmdTimeout / 3).
deadline=$((SECONDS + 60))
until status=$("$root/scripts/slurm.sh" status 2>&1); do
  [ "$SECONDS" -lt "$deadline" ] || fail "Slurm is up but its nodes are not ready after 60 s: $status"
  sleep 0.5
done
# Nothing of an outer Slurm job (this suite may run inside one) may reach
# the tide cluster's srun and sbatch: they would look for that job here.
for v in $(compgen -e | grep '^SLURM_' | grep -vx SLURM_CONF || true); do unset "$v"; done
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export TIDE_COMM_TIMEOUT=${TIDE_COMM_TIMEOUT:-20}

run() {
  echo "+ $*" >&2
  timeout "$limit" "$@"
}
field() { sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",}]*\)\"\{0,1\}.*/\1/p" "$1" | head -1; }
job_state() { { scontrol show job "$1" 2>/dev/null || true; } | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -1; }
# Waits (up to $limit s) for batch job $1 to end; prints "STATE EXITCODE".
wait_job() {
  local start state
  start=$(date +%s)
  while state=$(job_state "$1"); case "$state" in PENDING|CONFIGURING|RUNNING|COMPLETING|"") true ;; *) false ;; esac; do
    [ $(($(date +%s) - start)) -lt "$limit" ] || { echo "still $state after $limit s"; return 0; }
    sleep 0.2
  done
  echo "$state $({ scontrol show job "$1" || true; } | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p' | head -1)"
}

case "$mode" in
  where)
    out=$(run srun -N 2 -n 4 "$prog" 2>&1) || fail "srun failed (status $?): $out"
    echo "$out"
    # As with mpirun (run_cluster_test.sh where): ranks 0,1 on node1 and
    # 2,3 on node2 (srun's block distribution), local ranks 0,1 of 2 each,
    # one network namespace per node; and MPI's node-local rank is the one
    # Slurm announced (tide says so when they differ).
    if echo "$out" | grep -q "the launcher says"; then fail "Slurm's SLURM_LOCALID and MPI's node-local rank differ"; fi
    echo "$out" | check_where || fail "ranks under srun are wrong"
    # torchrun's variables from Slurm's, for a step of 3 tasks on 2 nodes
    # (2 on node1, 1 on node2): LOCAL_WORLD_SIZE differs between the nodes.
    # NODE_RANK is the node's place in the step, MASTER_ADDR its first node.
    vars=$(run srun -N 2 -n 3 "$root/launch/tide-rank" sh -c \
      'echo "vars $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $NODE_RANK $MASTER_ADDR:$MASTER_PORT $(hostname)"' 2>&1) ||
      fail "srun tide-rank failed: $vars"
    got=$(echo "$vars" | grep '^vars ' | sort -k2,2n | tr '\n' ';' || true)
    want="vars 0 0 3 2 0 node1:29500 node1;vars 1 1 3 2 0 node1:29500 node1;vars 2 0 3 1 1 node1:29500 node2;"
    [ "$got" = "$want" ] || fail "tide-rank under srun: got '$got', expected '$want'"
    echo "$vars"
    # Without PMIx (srun --mpi=none) each task would be a world of one:
    # every one of them refuses to start, saying how to launch instead.
    if out=$(run srun --mpi=none -N 2 -n 2 "$prog" 2>&1); then fail "srun --mpi=none started a job: $out"; fi
    n=$(grep -c "tasks that Slurm started, but not through MPI" <<< "$out" || true)
    [ "$n" -eq 2 ] || fail "srun --mpi=none: $n of 2 tasks refused to run alone: $out"
    # tiderun inside an allocation, no -np and no hosts: mpirun takes Slurm's
    # nodes and tasks, 2 on each.
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    job=$(run sbatch --parsable -N 2 --ntasks-per-node=2 --output="$work/alloc.log" \
      --wrap "$root/launch/tiderun --bind-to none $prog") || fail "sbatch failed: $job"
    state=$(wait_job "${job%%;*}")
    [ "$state" = "COMPLETED 0:0" ] || fail "tiderun inside sbatch: $state: $(cat "$work/alloc.log" 2>/dev/null)"
    check_where < "$work/alloc.log" || fail "tiderun in the allocation placed the ranks wrongly: $(cat "$work/alloc.log")"
    # And torchrun's node variables there: node2's ranks are node 1, rank 0's
    # host (node1) the master.
    job=$(run sbatch --parsable -N 2 --ntasks-per-node=2 --output="$work/vars.log" \
      --wrap "$root/launch/tiderun --bind-to none sh -c 'echo \"vars \$RANK \$NODE_RANK \$GROUP_RANK \$MASTER_ADDR \$(hostname)\"'") ||
      fail "sbatch failed: $job"
    state=$(wait_job "${job%%;*}")
    [ "$state" = "COMPLETED 0:0" ] || fail "tiderun inside sbatch: $state: $(cat "$work/vars.log" 2>/dev/null)"
    got=$(grep '^vars ' "$work/vars.log" | sort -k2,2n | tr '\n' ';' || true)
    want="vars 0 0 0 node1 node1;vars 1 0 0 node1 node1;vars 2 1 1 node1 node2;vars 3 1 1 node1 node2;"
    [ "$got" = "$want" ] || fail "tiderun in the allocation: got '$got', expected '$want'"
    echo "OK: srun -N 2 -n 4 gives the ranks mpirun gives; tide-rank sets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR; tiderun in an allocation runs 2 ranks on each node, with their node ranks"
    ;;

  train)
    work=${3:?"train needs a work directory"}
    rm -rf "$work"
    mkdir -p "$work"
    args=(--max-steps 60 --dtype f64 --progress lines)
    # The reference: mpirun over the cluster's rsh agent, 2 nodes x 2 ranks.
    run "$root/launch/tiderun" -np 4 -H node1:2,node2:2 --rsh-agent "$("$cluster" agent)" --net "$("$cluster" net)" \
      --bind-to none "$prog" "${args[@]}" --json "$work/mpirun.json" >"$work/mpirun.log" 2>&1 ||
      fail "mpirun 2 nodes x 2 ranks failed: $(tail -5 "$work/mpirun.log")"
    # The command a Slurm user types.
    run srun -N 2 -n 4 "$prog" "${args[@]}" --json "$work/srun.json" >"$work/srun.log" 2>&1 ||
      fail "srun -N 2 -n 4 failed: $(tail -5 "$work/srun.log")"
    # The example job script, submitted as a user would (from the
    # repository root); and tiderun inside an allocation (no -np, no hosts:
    # mpirun takes Slurm's). Both queued at once, waited for here (sbatch
    # --wait looks only every few seconds).
    a=$(cd "$root" && TIDE_TRAINER=$prog TIDE_FLIGHT_DIR=$work/flight run sbatch --parsable --output="$work/sbatch.log" \
      examples/slurm/train.sbatch "${args[@]}" --json "$work/sbatch.json") || fail "sbatch failed: $a"
    trap 'scancel "${a%%;*}" 2>/dev/null || true' EXIT
    b=$(run sbatch --parsable -N 2 --ntasks-per-node=2 --output="$work/alloc.log" \
      --wrap "$root/launch/tiderun --bind-to none $prog ${args[*]} --json $work/alloc.json") || fail "sbatch failed: $b"
    trap 'scancel "${a%%;*}" "${b%%;*}" 2>/dev/null || true' EXIT
    state=$(wait_job "${a%%;*}")
    [ "$state" = "COMPLETED 0:0" ] || fail "sbatch examples/slurm/train.sbatch: $state: $(tail -5 "$work/sbatch.log" 2>/dev/null)"
    grep -q "trained steps 0..60 on 4 ranks" "$work/sbatch.log" 2>/dev/null || fail "the batch job's output lacks its summary: $(cat "$work/sbatch.log")"
    state=$(wait_job "${b%%;*}")
    [ "$state" = "COMPLETED 0:0" ] || fail "tiderun inside sbatch: $state: $(tail -5 "$work/alloc.log" 2>/dev/null)"
    trap - EXIT
    ref=$(field "$work/mpirun.json" final_loss || true)
    [ -n "$ref" ] || fail "no final_loss in $work/mpirun.json"
    for how in srun sbatch alloc; do
      got=$(field "$work/$how.json" final_loss 2>/dev/null || true)
      echo "final loss: mpirun $ref, $how $got"
      [ "$got" = "$ref" ] || fail "$how ended at loss '$got', mpirun at $ref"
    done
    echo "OK: srun, sbatch of the example and tiderun in an allocation end at mpirun's loss, $ref"
    ;;

  cancel)
    work=${3:?"cancel needs a work directory"}
    rm -rf "$work"
    mkdir -p "$work/flight"
    # A run far longer than the test; cancelled once it has trained a while.
    job=$(cd "$root" && TIDE_TRAINER=$prog TIDE_FLIGHT_DIR=$work/flight sbatch --parsable --output="$work/job.log" \
      examples/slurm/train.sbatch --max-steps 1000000 --epochs 100000 --progress lines --log-every 5) ||
      fail "sbatch failed: $job"
    job=${job%%;*}
    echo "batch job $job"
    trap 'scancel "$job" 2>/dev/null || true' EXIT
    start=$(date +%s)
    until grep -q '^step 10/' "$work/job.log" 2>/dev/null; do
      state=$(job_state "$job")
      case "$state" in PENDING|CONFIGURING|RUNNING|"") ;; *) fail "the job ended ($state) before step 10: $(tail -5 "$work/job.log")" ;; esac
      [ $(($(date +%s) - start)) -lt "$limit" ] || fail "no step 10 within $limit s: $(tail -5 "$work/job.log" 2>/dev/null)"
      sleep 0.2
    done
    t0=$(date +%s%N)
    scancel "$job"
    until state=$(job_state "$job") && [ -n "$state" ] && [ "$state" != RUNNING ] && [ "$state" != COMPLETING ]; do
      [ $((($(date +%s%N) - t0) / 1000000000)) -lt 30 ] || fail "the job still $state 30 s after scancel"
      sleep 0.1
    done
    ms=$((($(date +%s%N) - t0) / 1000000))
    trap - EXIT
    cat "$work/job.log"
    echo "job $job: $state ${ms} ms after scancel"
    [ "$state" = CANCELLED ] || fail "job state $state, expected CANCELLED"
    for r in 0 1 2 3; do
      grep -q "tide: rank $r: ended by the launcher (SIGTERM)" "$work/job.log" || fail "rank $r did not report Slurm's SIGTERM"
      [ -s "$work/flight/flight.rank$r.json" ] || fail "rank $r left no flight record in $work/flight"
    done
    "$root/launch/tide-trace" flight "$work/flight" >"$work/flight.txt" 2>&1 || fail "tide-trace flight: $(cat "$work/flight.txt")"
    grep -q "ended by the launcher (SIGTERM)" "$work/flight.txt" || fail "the flight records do not say how the ranks ended: $(cat "$work/flight.txt")"
    echo "OK: scancel ended the job in ${ms} ms; 4 ranks reported SIGTERM and left flight records"
    ;;

  killed)
    # tide_comm_kill small: rank 1 kills itself (SIGKILL) while ranks 0 (on
    # its node) and 2 (on node2) wait in all-reduce #1.
    exec "$root/tests/comm/expect_survivors.sh" 25 3 1 \
      "all_reduce #1 \\([0-9]+ x f32, sum, 3 ranks\\).*[:;] ranks? ([0-9]+, )*1(, [0-9]+)* vanished" \
      srun -N 2 -n 3 --kill-on-bad-exit=1 "$prog" small
    ;;

  *) echo "run_slurm_test.sh: unknown mode '$mode'" >&2; exit 2 ;;
esac
