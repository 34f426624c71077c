#!/usr/bin/env bash
# The main job: set up, build, and train the example MLP data-parallel on 2
# local ranks (launch/tiderun over mpirun). Each rank's model goes on its
# GPU (local rank % GPUs; NCCL for the gradients), which two ranks share on
# a one-GPU machine (the first line says so); on the CPU backend where there
# is no GPU, and the first line says why (--device cuda insists, --device
# cpu stays on the CPU).
# Arguments go to the trainer (try --help); TIDE_RANKS changes the rank count.
#   scripts/run.sh                     # generated task, 3 epochs
#   scripts/run.sh --data ~/mnist      # MNIST (IDX files)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" >/dev/null
ranks=${TIDE_RANKS:-2}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
exec "$root/launch/tiderun" --local -np "$ranks" \
  "${TIDE_BUILD_DIR:-$root/build}/examples/train_data_parallel" --epochs 3 "$@"
