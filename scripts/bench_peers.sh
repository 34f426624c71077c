#!/usr/bin/env bash
# tide against its peers on this machine's CPU, the whole table in one go:
#   y = x + 1 per op at 2, 1,000 and 100,000 elements (tide async and naive,
#     libtorch, PyTorch, NumPy);
#   10 x randn 1000 x 1000, and 10 x (randn + matmul) (tide, libtorch,
#     PyTorch, NumPy);
#   the MLP trainer, 1 process (tide, PyTorch) and 2 ranks (tide, PyTorch DDP
#     over gloo), samples/s;
#   all-reduce of 8 B to 32 KiB on 2 ranks (tide, MPI_Allreduce), us.
# Every peer runs one thread (OpenBLAS, OpenMP, PyTorch), tide at its
# defaults. TIDE_BENCH_ROUNDS rounds (default 3), each running every program
# once in the order above; the table gives each cell's median over the rounds
# and every round's value. Writes OUT/peers_table.txt and .json (OUT defaults
# to docs/results).
#   scripts/bench_peers.sh [OUT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/docs/results}
rounds=${TIDE_BENCH_ROUNDS:-3}
build=${TIDE_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh" --bench --peers
"$root/scripts/build.sh" >/dev/null
cmake -S "$root/examples/peers" -B "$root/build-peers" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build-peers" >/dev/null
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# Debian's python, which has python3-torch and python3-numpy (a python3
# earlier on PATH may not).
py=/usr/bin/python3
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
train=(--max-steps 600 --epochs 1000 --log-every 100 --progress lines)

for r in $(seq "$rounds"); do
  echo "bench_peers: round $r of $rounds" >&2
  "$build/examples/bench_ops" --runs 11 --json "$tmp/tide_ops.$r.json" >/dev/null
  "$root/build-peers/libtorch_ops" --runs 11 --json "$tmp/libtorch_ops.$r.json" >/dev/null
  "$py" "$root/examples/peers/cpu_ops.py" --runs 11 --json "$tmp/py_ops.$r.json" >/dev/null
  "$root/launch/tiderun" --local -np 1 "$build/examples/train_data_parallel" "${train[@]}" \
    --json "$tmp/tide_train1.$r.json" >/dev/null
  "$py" "$root/examples/peers/torch_train_mlp.py" --device cpu --steps 600 --json "$tmp/torch_train1.$r.json" >/dev/null
  "$root/launch/tiderun" --local -np 2 "$build/examples/train_data_parallel" "${train[@]}" \
    --json "$tmp/tide_train2.$r.json" >/dev/null
  "$py" "$root/examples/peers/torch_ddp_mlp.py" --ranks 2 --steps 600 --json "$tmp/ddp_train2.$r.json" >/dev/null
  "$root/launch/tiderun" --local -np 2 "$build/examples/bench_allreduce" --max-bytes 32K --reps 11 \
    --json "$tmp/allreduce.$r.json" >/dev/null
done
"$py" "$root/scripts/peers_table.py" "$tmp" "$rounds" "$out/peers_table.json" \
  "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee "$out/peers_table.txt"
