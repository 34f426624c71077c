#!/usr/bin/env bash
# Benchmarks across 2 namespace nodes (scripts/cluster.sh), as root:
#   - examples/bench_allreduce on 2 nodes x 1 rank (TCP): tide's all_reduce_
#     against MPI_Allreduce in the same run, per size;
#   - examples/train_data_parallel, time per step on 2 nodes x 1 rank (TCP)
#     against 1 node x 2 ranks (shared memory), same global batches, for the
#     default model and a wide one.
# The runs alternate (all-reduce, then each config in both layouts) for REPS
# repetitions; the results are the medians over the repetitions, with min..max.
#
#   scripts/bench_cluster.sh [--out DIR] [--reps N] [--steps N] [--build DIR]
#
#   --out DIR    where the results go (default docs/results): cluster_allreduce_2nodes.{json,txt}
#                and cluster_train.{json,txt}; every run's own JSON in DIR/cluster_runs/ meanwhile,
#                removed at the end
#   --reps N     repetitions (default 5)
#   --steps N    training steps per run (default 300)
#   --build DIR  the build directory (default build)
#
# Brings 2 nodes up if no cluster is up, and then down again at the end; a
# cluster already up is used and left up. Needs jq. Exit status 77 when this
# machine cannot make the nodes (see scripts/cluster.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cluster=$root/scripts/cluster.sh
out=$root/docs/results reps=5 steps=300 build=$root/build
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=${2:?"--out needs a directory"}; shift 2 ;;
    --reps) reps=${2:?"--reps needs a number"}; shift 2 ;;
    --steps) steps=${2:?"--steps needs a number"}; shift 2 ;;
    --build) build=${2:?"--build needs a directory"}; shift 2 ;;
    -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "bench_cluster: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
case "$reps$steps" in *[!0-9]*) echo "bench_cluster: --reps and --steps need positive integers" >&2; exit 2 ;; esac
command -v jq >/dev/null || "$root/scripts/setup.sh" --bench
bench=$build/examples/bench_allreduce trainer=$build/examples/train_data_parallel
[ -x "$bench" ] && [ -x "$trainer" ] || { echo "bench_cluster: build first (no $bench or $trainer)" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
runs=$out/cluster_runs
rm -rf "$runs"
mkdir -p "$runs"

if ! "$cluster" status >/dev/null 2>&1; then
  trap '"$cluster" down >/dev/null 2>&1 || true' EXIT
  trap 'exit 130' INT TERM
  "$cluster" up 2
fi
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OPENBLAS_NUM_THREADS=1
net=$("$cluster" net)
launch=("$root/launch/tiderun" -np 2 --rsh-agent "$("$cluster" agent)" --net "$net" --bind-to none)
shown="launch/tiderun -np 2 --rsh-agent \"\$(scripts/cluster.sh agent)\" --net $net --bind-to none"
ar_args=(--max-bytes 16M --iters 50 --warmup 5)
train_args=(--max-steps "$steps" --epochs 1000 --progress lines)
configs=("default|" "wide-batch256|--hidden 1024,1024,1024 --batch 256")
layouts=("2x1|node1:1,node2:1|2 nodes x 1 rank" "1x2|node1:2|1 node x 2 ranks")
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

for rep in $(seq "$reps"); do
  echo "== repetition $rep of $reps"
  "${launch[@]}" -H node1:1,node2:1 "$bench" "${ar_args[@]}" --json "$runs/allreduce_$rep.json" >/dev/null
  for c in "${configs[@]}"; do
    name=${c%%|*}
    read -r -a flags <<<"${c#*|}"
    for l in "${layouts[@]}"; do
      IFS='|' read -r tag hosts _ <<<"$l"
      "${launch[@]}" -H "$hosts" "$trainer" "${flags[@]}" "${train_args[@]}" --json "$runs/train_${name}_${tag}_$rep.json" >/dev/null
      echo "   $name $tag: $(jq -r '.result.step_ms | . * 100 | round / 100' "$runs/train_${name}_${tag}_$rep.json") ms/step"
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
machine=$(jq -c '.machine' "$runs/allreduce_1.json")
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
mpi=$(mpirun --version 2>/dev/null | head -1)

# All-reduce: per size, the medians over the runs (and min..max), the median of the runs' ratios.
jq -s --arg date "$date" --arg commit "$commit" --arg cpu "$cpu" --arg mpi "$mpi" --argjson machine "$machine" \
  --arg cmd "$shown -H node1:1,node2:1 build/examples/bench_allreduce ${ar_args[*]} --json FILE" \
  --arg load "$load_before -> $load_after" '
  def median: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  {benchmark: "bench_allreduce across 2 namespace nodes (1 rank each, TCP over veth + bridge)",
   command: $cmd, commit: $commit, date: $date, machine: ($machine + {cpu: $cpu, mpi: $mpi}), load: $load,
   runs_count: length,
   median_over_runs: [ [ .[].rows[] ] | group_by(.bytes)[] |
     {bytes: .[0].bytes, count: .[0].count,
      tide_us: (map(.tide_us) | median), mpi_us: (map(.mpi_us) | median),
      tide_over_mpi: (map(.tide_us / .mpi_us) | median),
      tide_us_range: [ (map(.tide_us) | min), (map(.tide_us) | max) ],
      mpi_us_range: [ (map(.mpi_us) | min), (map(.mpi_us) | max) ],
      tide_push_ns: (map(.tide_push_ns) | median), wrong: (map(.wrong) | add)} ],
   runs: [ .[].rows ]}' "$runs"/allreduce_*.json >"$out/cluster_allreduce_2nodes.json"

# Training: per config and layout, the medians over the runs.
train_json() {
  local c name l tag hosts label first=1
  echo "["
  for c in "${configs[@]}"; do
    name=${c%%|*}
    for l in "${layouts[@]}"; do
      IFS='|' read -r tag hosts label <<<"$l"
      [ "$first" -eq 1 ] || echo ","
      first=0
      jq -s --arg config "$name" --arg flags "${c#*|}" --arg hosts "$hosts" --arg layout "$label" '
        def median: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
        {config: $config, flags: $flags, layout: $layout, hosts: $hosts,
         step_ms: {median: (map(.result.step_ms) | median), min: (map(.result.step_ms) | min),
                   max: (map(.result.step_ms) | max), runs: map(.result.step_ms)},
         comm_ms_per_step: {median: (map(.result.comm_ms_per_step) | median), runs: map(.result.comm_ms_per_step)},
         comm_hidden_fraction: (map(.result.comm_hidden_fraction) | median),
         final_loss: (map(.result.final_loss) | unique), params_digest: (map(.result.params_digest) | unique),
         buckets: .[0].result.buckets}' "$runs"/train_"${name}_${tag}"_*.json
    done
  done
  echo "]"
}
train_json | jq --arg date "$date" --arg commit "$commit" --arg cpu "$cpu" --arg mpi "$mpi" --argjson machine "$machine" \
  --arg cmd "$shown -H HOSTS build/examples/train_data_parallel FLAGS ${train_args[*]} --json FILE" \
  --arg load "$load_before -> $load_after" --argjson steps "$steps" --argjson reps "$reps" '
  {benchmark: "train_data_parallel on 2 namespace nodes x 1 rank (TCP) vs 1 node x 2 ranks (shared memory)",
   command: $cmd, commit: $commit, date: $date, machine: ($machine + {cpu: $cpu, mpi: $mpi}), load: $load,
   steps: $steps, reps: $reps,
   note: "runs alternated (all-reduce, then each config on 2x1 and 1x2) in each repetition; --bind-to none; OPENBLAS_NUM_THREADS=1",
   results: .}' >"$out/cluster_train.json"

# The tables.
{
  echo "# bench_allreduce across 2 namespace nodes (scripts/cluster.sh up 2), 1 rank each, TCP; $reps runs (scripts/bench_cluster.sh)"
  jq -r '"# " + .command, "# commit \(.commit), \(.date); \(.machine.nproc) cpus (\(.machine.cpu)), \(.machine.mpi); load \(.load)"' \
    "$out/cluster_allreduce_2nodes.json"
  echo "# medians over the runs (each run: mean of 50 iterations, averaged across ranks); tide/MPI: median of the runs' ratios"
  printf '%10s %9s | %9s %19s | %9s %19s | %8s %7s %6s\n' size count "tide us" "(min..max)" "MPI us" "(min..max)" tide/MPI "push ns" wrong
  jq -r '.median_over_runs[] | [.bytes, .count, .tide_us, .tide_us_range[0], .tide_us_range[1], .mpi_us,
    .mpi_us_range[0], .mpi_us_range[1], .tide_over_mpi, .tide_push_ns, .wrong] | @tsv' "$out/cluster_allreduce_2nodes.json" |
    awk -F'\t' '{ printf "%10d %9d | %9.1f %19s | %9.1f %19s | %8.2f %7.0f %6d\n", $1, $2, $3,
      sprintf("(%.1f..%.1f)", $4, $5), $6, sprintf("(%.1f..%.1f)", $7, $8), $9, $10, $11 }'
} >"$out/cluster_allreduce_2nodes.txt"
{
  echo "# train_data_parallel, 2 namespace nodes x 1 rank (TCP) vs 1 node x 2 ranks (shared memory), same global batch (scripts/bench_cluster.sh)"
  jq -r '"# " + .command, "# commit \(.commit), \(.date); \(.machine.nproc) cpus (\(.machine.cpu)), \(.machine.mpi); load \(.load)",
    "# \(.steps) steps, \(.reps) repetitions alternated, medians; --bind-to none; OPENBLAS_NUM_THREADS=1"' "$out/cluster_train.json"
  echo
  printf '%-14s %-17s %8s %16s %13s %7s  %s\n' config layout ms/step "(min..max)" "comm ms/step" hidden "final loss (every run)"
  jq -r '.results[] | [.config, .layout, .step_ms.median, .step_ms.min, .step_ms.max, .comm_ms_per_step.median,
    .comm_hidden_fraction, (.final_loss | map(tostring) | join(" "))] | @tsv' "$out/cluster_train.json" |
    awk -F'\t' '{ printf "%-14s %-17s %8.2f %16s %13.2f %6.0f%%  %s\n", $1, $2, $3, sprintf("(%.2f..%.2f)", $4, $5), $6, 100 * $7, $8 }'
  echo
  jq -r '.results | group_by(.config)[] | "\(.[0].config): time per step, 2 nodes x 1 rank / 1 node x 2 ranks = " +
    ((map(select(.hosts | test(","))) [0].step_ms.median) / (map(select(.hosts | test(",") | not))[0].step_ms.median) * 100 | round / 100 | tostring)' \
    "$out/cluster_train.json"
} >"$out/cluster_train.txt"
rm -rf "$runs"
cat "$out/cluster_allreduce_2nodes.txt" "$out/cluster_train.txt"
