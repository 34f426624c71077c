# The "linkcut" mode of run_cluster_test.sh (sourced from it: $prog is the
# trainer, $work a directory; launch, run, fail and $cluster come from there).
#
# 1. An uninterrupted run on 2 nodes x 1 rank, its final loss and parameter
#    digest from --json.
# 2. The same run again, with node2's link to the bridge cut (scripts/cluster.sh
#    link node2 down) once its first checkpoint is on disk: mpirun must exit
#    non-zero within a bound (tiderun --abort-timeout), each rank's own output
#    (tiderun --output-dir, written on its node) must hold the collective
#    timeout naming it, and the checkpoint must be intact.
# 3. The link mended, the run resumed from that checkpoint (--resume): it must
#    end with the same final loss and parameters, bit for bit, as run 1.
#
# $model (the mode's optional third argument) picks the trainer's model:
#   small    --hidden 64 in f64: buckets under 64 KiB, MPI's non-blocking path
#   default  the trainer's defaults (a user's first run): one bucket of about
#            1.2 MB, on MPI's blocking path, whose deadline the watchdog holds
#   wide     --hidden 1024,1024: a bucket of about 4.5 MB
#
# TIDE_CLUSTER_CUT_TIMEOUT (seconds, default 4): TIDE_COMM_TIMEOUT of these
# runs. TIDE_CLUSTER_ABORT_TIMEOUT (default 5): tiderun's --abort-timeout.
cut_timeout=${TIDE_CLUSTER_CUT_TIMEOUT:-4}
abort_timeout=${TIDE_CLUSTER_ABORT_TIMEOUT:-5}
# How much later than TIDE_COMM_TIMEOUT after the cut a rank may report its
# timeout: the collective began before the cut (so this is generous), and
# the report is a file written on the rank's node, looked at every 0.1 s.
# Times the build's TIDE_TEST_TIME_SCALE ($scale, from run_cluster_test.sh).
slack=$scale
# The runs are long enough that the cut comes well before their end. A build
# $scale times slower (a sanitizer's) runs $scale times fewer steps in about
# the same time, with the same checkpoints: under AddressSanitizer the
# default model's 1,200 steps took most of a minute.
case "${model:-small}" in
  small) steps=6000 every=200 model_args=(--hidden 64 --dtype f64) ;;
  default) steps=1200 every=100 model_args=() ;;
  wide) steps=400 every=40 model_args=(--hidden 1024,1024) ;;
  *) fail "unknown model '$model' (small, default or wide)" ;;
esac
steps=$((steps / scale))
[ "$steps" -ge $((2 * every)) ] || steps=$((2 * every))
args=(--max-steps "$steps" --epochs 1000 "${model_args[@]}" --progress lines --log-every 100
  --checkpoint-every "$every")
rm -rf "$work"
mkdir -p "$work"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# node2's processes but Slurm's daemons (scripts/slurm.sh may run one there).
node_pids() {
  local p
  for p in $(ip netns pids node2 2>/dev/null); do
    case "$(cat "/proc/$p/comm" 2>/dev/null)" in slurmd|slurmstepd|"") ;; *) printf '%s ' "$p" ;; esac
  done
}

# Whatever happens below, node2 gets its link back.
trap '"$cluster" link node2 up >/dev/null 2>&1 || true' EXIT

export TIDE_COMM_TIMEOUT=$cut_timeout
reference_run

# The run to cut. Its output goes to files, not a pipe: the daemon on the cut
# node keeps its end of mpirun's output open until the link comes back.
ck=$work/cut/checkpoint.safetensors
echo "+ ${launch[*]} --output-dir $work/out --abort-timeout $abort_timeout -np 2 -H node1:1,node2:1 $prog ${args[*]} --checkpoint $work/cut"
timeout "$limit" "${launch[@]}" --output-dir "$work/out" --abort-timeout "$abort_timeout" -np 2 -H node1:1,node2:1 \
  "$prog" "${args[@]}" --checkpoint "$work/cut" >"$work/cut.log" 2>&1 &
job=$!
t_start=$(now)
while ! [ -e "$ck" ]; do
  kill -0 "$job" 2>/dev/null || { wait "$job" || true; fail "the run ended before its first checkpoint: $(tail -5 "$work/cut.log")"; }
  [ "$(since "$t_start" "$(now)" | cut -d. -f1)" -lt "$limit" ] || fail "no checkpoint after $limit s"
  sleep 0.05
done
"$cluster" link node2 down
t_cut=$(now)
# When each rank's own output first holds a collective timeout (the files
# are written on the rank's node as the lines come; looked at every 0.1 s).
# A report is a collective's timeout, or (on node1) its failure because the
# cut-off rank's process vanished: Open MPI's daemon on node2 may kill that
# rank once its link to mpirun is gone, before the rank's own timeout.
report_re='timed out after|collective failure: .* vanished: its process is gone'
reported=("" "")
while kill -0 "$job" 2>/dev/null; do
  for r in 0 1; do
    [ -z "${reported[$r]}" ] && grep -qsE "$report_re" "$work/out/1/rank.$r/stderr" && reported[$r]=$(now)
  done
  sleep 0.1
done
status=0
wait "$job" || status=$?
t_exit=$(now)
echo "--- output of the cut run (mpirun's side)"
cat "$work/cut.log"
echo "---"
case "$status" in
  0) fail "the run completed although node2 was cut off (cut too late? it has $steps steps)" ;;
  124) fail "mpirun did not exit within $limit s of the start after the cut (tiderun --abort-timeout $abort_timeout)" ;;
esac
echo "mpirun exited with status $status, $(since "$t_cut" "$t_exit") s after the cut"

# Every rank's own output holds the timeout of a collective, naming the rank;
# except that node2's rank may have been killed by its daemon first, which
# rank 0's report then names ("rank 1 vanished").
for r in 0 1; do
  err=$work/out/1/rank.$r/stderr
  [ -r "$err" ] || fail "no output file $err for rank $r"
  line=$(grep -m1 -E "$report_re" "$err" || true)
  if [ -z "$line" ] && [ "$r" = 1 ] && grep -q "rank 1 vanished: its process is gone" "$work/out/1/rank.0/stderr"; then
    echo "rank 1 was ended by its node's daemon before its own timeout; rank 0 named it"
    continue
  fi
  [ -n "$line" ] || fail "rank $r's output has no collective timeout: $(cat "$err")"
  echo "$line" | grep -q "rank $r of" || fail "rank $r's timeout does not name it: $line"
  after=$(since "$t_cut" "${reported[$r]:-$(stat -c %.Y "$err")}")
  echo "rank $r, $after s after the cut: ${line:0:300}"
  awk -v a="$after" -v b="$((cut_timeout + slack))" 'BEGIN { exit !(a <= b) }' ||
    fail "rank $r reported its timeout $after s after the cut: later than TIDE_COMM_TIMEOUT $cut_timeout s + $slack s"
done

# The cut node's daemon goes once it can tell that mpirun is gone.
"$cluster" link node2 up
for _ in $(seq 60); do [ -z "$(node_pids)" ] && break; sleep 0.5; done
[ -z "$(node_pids)" ] || echo "note: processes left on node2 30 s after the link came back: $(node_pids)"

# Resume: the trainer reads and checks the checkpoint (magic, checksum, run).
# Once more if mpirun could not reach node2 yet: the mended link's first TCP
# connections can still time out ("connect() to ... failed: Operation now in
# progress") while the nodes relearn each other; that is the network
# coming back, not the resume under test.
resume() {
  run -np 2 -H node1:1,node2:1 "$prog" "${args[@]}" --checkpoint "$work/cut" --resume --json "$work/resumed.json" \
    >"$work/resumed.log" 2>&1
}
if ! resume; then
  grep -q "connect() to .* failed" "$work/resumed.log" ||
    fail "the resumed run failed: $(tail -5 "$work/resumed.log")"
  echo "note: the first resume could not connect to node2 ($(grep -m1 -o 'connect() to [^ ]* failed' "$work/resumed.log")); again in 3 s"
  sleep 3
  resume || fail "the resumed run failed (status $?): $(tail -5 "$work/resumed.log")"
fi
check_resumed "$work/resumed.log" "$work/resumed.json" resume
echo "OK ($model model): link cut at step >= $every: both ranks timed out, mpirun exited ($status); resumed from step $from to the same parameters"
