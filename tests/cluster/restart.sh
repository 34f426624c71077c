# The "restart" mode of run_cluster_test.sh (sourced from it: $prog is the
# trainer, $work a directory; launch, run, fail and $limit come from there).
#
# 1. An uninterrupted run on 2 nodes x 1 rank: its final loss and parameter
#    digest from --json.
# 2. The same run under tiderun --max-restarts 1, always with --resume (the
#    first attempt finds no checkpoint and starts afresh), rank 1 (on node2)
#    killed with SIGKILL shortly after the first checkpoint is on disk
#    (kill_once.sh, first attempt only). tiderun must say the restart in one
#    line with its cause, the second attempt must resume from a checkpoint
#    inside the run, and the job must end with status 0 and the final loss
#    and parameters, bit for bit, of run 1.
# Long enough (about 2 s here) that the kill lands well inside the run.
steps=$((8000 / scale))
every=500
[ "$steps" -ge $((8 * every)) ] || steps=$((8 * every))
args=(--max-steps "$steps" --epochs 1000 --hidden 64 --dtype f64 --progress lines --log-every 1000
  --checkpoint-every "$every")
rm -rf "$work"
mkdir -p "$work"

reference_run

export TIDE_TEST_KILL_AFTER=$work/job/checkpoint.safetensors TIDE_TEST_KILL_RANK=1
status=0
run --max-restarts 1 --output-dir "$work/out" -np 2 -H node1:1,node2:1 "$here/kill_once.sh" \
  "$prog" "${args[@]}" --checkpoint "$work/job" --resume --json "$work/job.json" >"$work/job.log" 2>&1 || status=$?
echo "--- the job's output"
cat "$work/job.log"
echo "---"
[ "$status" -eq 0 ] || fail "the job did not finish after its restart (status $status)"
said=$(grep -E '^tiderun: the job failed \(.*\); restart 1 of 1$' "$work/job.log" || true)
[ -n "$said" ] || fail "tiderun did not say the restart on one line"
echo "$said" | grep -qE 'rank 1 (on node2 was ended by signal 9|exited with status 137)' ||
  fail "the restart line does not name rank 1's death: $said"
[ "$(grep -c '^tiderun: the job failed' "$work/job.log")" -eq 1 ] || fail "more than one restart"
check_resumed "$work/job.log" "$work/job.json" restart
echo "OK: rank 1 killed after step $every, the job restarted once, resumed from step $from to the same parameters"
