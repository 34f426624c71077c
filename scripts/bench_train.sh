#!/usr/bin/env bash
# Weak scaling and overlap of the data-parallel trainer on this machine:
# 1 rank and 2 ranks with the same per-rank batch, alternated, several times
# each, for a few model / bucket configurations. Writes OUT/train_scaling.json
# (every run's figures, the medians, and the 2-rank / 1-rank time per step)
# and OUT/train_scaling.txt. OUT defaults to docs/results.
#   scripts/bench_train.sh [OUT] ; TIDE_BENCH_REPS=5 for more repetitions
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/docs/results}
reps=${TIDE_BENCH_REPS:-3}
steps=${TIDE_BENCH_STEPS:-300}
"$root/scripts/setup.sh"
"$root/scripts/build.sh" >/dev/null
bin=${TIDE_BUILD_DIR:-$root/build}/examples/train_data_parallel
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1

# name|trainer flags
configs=(
  "default|--hidden 512,512 --batch 64 --bucket-mb 25"
  "default-small-buckets|--hidden 512,512 --batch 64 --bucket-mb 0.25"
  "wide|--hidden 1024,1024,1024 --batch 128 --bucket-mb 25"
  "wide-small-buckets|--hidden 1024,1024,1024 --batch 128 --bucket-mb 2"
  "wide-batch256|--hidden 1024,1024,1024 --batch 256 --bucket-mb 25"
  "wide-batch256-small-buckets|--hidden 1024,1024,1024 --batch 256 --bucket-mb 2"
)

field() { grep "\"$2\":" "$1" | head -1 | sed 's/.*": //; s/,$//; s/"//g'; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

json="$tmp/all.json"
txt="$out/train_scaling.txt"
{
  echo "train_data_parallel weak scaling, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $steps steps, $reps reps"
  printf '%-28s %10s %10s %8s %12s %12s\n' config "1r ms/st" "2r ms/st" "2r/1r" "2r hidden%" "2r comm ms"
} >"$txt"
{
  echo "{"
  echo "  \"benchmark\": \"train_scaling\","
  echo "  \"command\": \"scripts/bench_train.sh\","
  echo "  \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
  echo "  \"host\": \"$(hostname)\", \"cores\": $(nproc), \"steps\": $steps, \"reps\": $reps,"
  echo "  \"configs\": ["
} >"$json"
first=1
for entry in "${configs[@]}"; do
  name=${entry%%|*}
  flags=${entry#*|}
  for rep in $(seq "$reps"); do
    for r in 1 2; do
      # shellcheck disable=SC2086
      "$root/launch/tiderun" --local -np "$r" "$bin" $flags --epochs 1000 --max-steps "$steps" \
        --log-every 100 --progress lines --json "$tmp/$name.$r.$rep.json" >"$tmp/$name.$r.$rep.log"
    done
  done
  declare -A med=()
  for r in 1 2; do
    for f in step_ms comm_hidden_fraction comm_ms_per_step samples_per_s test_accuracy; do
      med[$r.$f]=$(for rep in $(seq "$reps"); do field "$tmp/$name.$r.$rep.json" $f; done | median)
    done
  done
  ratio=$(awk -v a="${med[2.step_ms]}" -v b="${med[1.step_ms]}" 'BEGIN {printf "%.3f", a / b}')
  printf '%-28s %10.2f %10.2f %8s %11.1f%% %12.3f\n' "$name" "${med[1.step_ms]}" "${med[2.step_ms]}" "$ratio" \
    "$(awk -v h="${med[2.comm_hidden_fraction]}" 'BEGIN {print 100 * h}')" "${med[2.comm_ms_per_step]}" >>"$txt"
  [ $first -eq 1 ] || echo "    ," >>"$json"
  first=0
  {
    echo "    {\"name\": \"$name\", \"flags\": \"$flags\","
    echo "     \"buckets\": \"$(field "$tmp/$name.2.1.json" buckets)\","
    for r in 1 2; do
      echo "     \"ranks$r\": {"
      for f in step_ms comm_hidden_fraction comm_ms_per_step samples_per_s test_accuracy; do
        runs=$(for rep in $(seq "$reps"); do field "$tmp/$name.$r.$rep.json" $f; done | paste -sd, -)
        echo "       \"$f\": {\"median\": ${med[$r.$f]}, \"runs\": [$runs]},"
      done
      echo "       \"ranks\": $r},"
    done
    echo "     \"time_per_step_2_over_1\": $ratio}"
  } >>"$json"
  unset med
done
echo "  ]" >>"$json"
echo "}" >>"$json"
cp "$json" "$out/train_scaling.json"
cat "$txt"
