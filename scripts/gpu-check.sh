#!/usr/bin/env bash
# The GPU check, in one go on a machine with a GPU, from a copy of the
# working tree: build there, then every test, the multi-rank NCCL tests,
# compute-sanitizer over the GPU tests, the GPU benchmarks beside PyTorch,
# and the trainer on one rank, traced, and on 2 ranks.
#
#   scripts/gpu-check.sh [DIR]
#
# Needs CMake, a C++20 compiler, CUDA (nvcc, NCCL), Open MPI, GoogleTest,
# CLI11 and OpenBLAS installed (scripts/setup.sh on Debian); PyTorch and
# pybind11 from pip when present (the Python module and the PyTorch peers;
# without them those parts are left out and say so). Results go to DIR
# (default: $OUT when set, else build-gpu/results), packed as
# gpu-results.tgz beside gpu_summary.json, summary.txt and run.log, so that
# at most 8 files come back. About 6 minutes on 16 cores and one H200.
# Exits non-zero when a test fails or a test's result is missing; missed
# speed targets and missing peers are only reported.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-${OUT:-$root/build-gpu/results}}
build=$root/build-gpu
res=$(mktemp -d)/gpu
mkdir -p "$dest" "$res"
jobs=$(nproc)
log=$dest/run.log
: >"$log"
say() { echo "gpu-check: $*" | tee -a "$log"; }
# Pack whatever exists, also when a step hangs or the script is stopped.
pack() {
  [ -f "$res/gpu_summary.json" ] && cp "$res/gpu_summary.json" "$dest/"
  [ -f "$res/summary.txt" ] && cp "$res/summary.txt" "$dest/"
  tar -C "$res" -czf "$dest/gpu-results.tgz" . 2>/dev/null
}
trap pack EXIT
# The whole check ends by TIDE_GPU_CHECK_SECONDS (default 540): a step gets
# at most what is left, and one with under 15 s left is not started.
deadline=$((SECONDS + ${TIDE_GPU_CHECK_SECONDS:-540}))
# step NAME SECONDS COMMAND...: output to NAME.txt, status recorded.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((deadline - SECONDS))
  if [ "$left" -lt 15 ]; then
    echo "$name not-run 0" >>"$res/steps.txt"
    say "$name: not run (the check's time is up)"
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" >"$res/$name.txt" 2>&1
  local rc=$?
  echo "$name $rc $((SECONDS - t0))" >>"$res/steps.txt"
  say "$name: status $rc in $((SECONDS - t0)) s"
  return $rc
}
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  git -C "$root" rev-parse HEAD 2>/dev/null || echo "no git"
  git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo "with uncommitted changes"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv 2>&1
  . /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"
  echo "cores $(nproc)"; lscpu 2>/dev/null | grep -E "^(Model name|Hypervisor vendor):"
  # What a host clock read and a kernel launch cost depend on: the clock
  # source (a VM without a usable TSC reads its clock by a system call), and
  # the GPU's confidential-computing mode (launches through encrypted channels).
  echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
  nvidia-smi conf-compute -f 2>&1 | head -2
  g++ --version | head -1; cmake --version | head -1; nvcc --version | tail -1
  mpirun --version 2>&1 | head -1
  dpkg-query -W -f '${Package} ${Version}\n' 'libnccl*' 2>/dev/null
  python3 -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version())" 2>&1 | tail -1
  ip -brief address 2>/dev/null
} >"$res/machine.txt" 2>&1
cat "$res/machine.txt" >>"$log"

# ---- build ------------------------------------------------------------------
py_args=()
if pybind_dir=$(python3 -m pybind11 --cmakedir 2>/dev/null); then
  py_args=(-Dpybind11_DIR="$pybind_dir" -DPython_EXECUTABLE="$(command -v python3)"
    -DPython3_EXECUTABLE="$(command -v python3)")
else
  py_args=(-DTIDE_BUILD_PYTHON=OFF)
  say "no pybind11 for $(command -v python3): the Python module is left out"
fi
# nlohmann-json, where the machine has none and nothing can be installed:
# unpacked into the tree before it is copied there (README, "Checking on a
# GPU machine"):
#   apt-get download nlohmann-json3-dev && dpkg -x nlohmann-json3-dev_*.deb third_party/nlohmann-json
vendored_json="$root/third_party/nlohmann-json/usr/include"
if [ ! -f /usr/include/nlohmann/json.hpp ] && [ -f "$vendored_json/nlohmann/json.hpp" ]; then
  py_args+=(-DTIDE_NLOHMANN_JSON_INCLUDE="$vendored_json")
  say "nlohmann-json from $vendored_json"
fi
configure=(cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90)
if ! step configure 120 "${configure[@]}" "${py_args[@]}"; then
  say "configure with the Python module failed (configure.txt): again without it"
  mv "$res/configure.txt" "$res/configure_python.txt"
  rm -rf "$build"
  step configure 120 "${configure[@]}" -DTIDE_BUILD_PYTHON=OFF || exit 1
fi
step build 300 cmake --build "$build" -j "$jobs" || exit 1
grep -E "warning:" "$res/build.txt" >"$res/build_warnings.txt" || true
say "$(wc -l <"$res/build_warnings.txt") compiler warning line(s)"
if ! grep -Eq "^CMAKE_CUDA_COMPILER:(FILEPATH|STRING)=/" "$build/CMakeCache.txt"; then
  say "no CUDA compiler found: the build has no GPU code"; exit 1
fi

status=0
# ---- NCCL between ranks sharing the GPU: can its sockets connect? -----------
# The defaults first; if the 2-rank NCCL tests fail with them, the rest runs
# with NCCL on the loopback interface, and the summary says so.
if ! step nccl_preflight 120 ctest --test-dir "$build" -R '^comm[.]nccl[.]np2$' --output-on-failure; then
  export NCCL_SOCKET_IFNAME=lo
  echo "NCCL_SOCKET_IFNAME=lo (the defaults failed: nccl_preflight.txt)" >>"$res/environment.txt"
  step nccl_preflight_lo 120 ctest --test-dir "$build" -R '^comm[.]nccl[.]np2$' --output-on-failure || status=1
fi

# ---- the multi-rank GPU tests (ctest label gpu), alone on the machine --------
step ctest_gpu 240 ctest --test-dir "$build" -L gpu -j 4 --output-on-failure --output-junit "$res/ctest_gpu_junit.xml" ||
  status=1

# ---- single-rank GPU tests per binary, counted (gtest JSON) -----------------
t=$build/tests
step gpu_core_tests 120 "$t/core/tide_core_tests" --gtest_filter='*Cuda*:*gpus*' --gtest_output="json:$res/gpu_core_tests.json" || status=1
step gpu_ops_tests 120 "$t/ops/tide_ops_tests" --gtest_filter='*Cuda*:*Gpu*' --gtest_output="json:$res/gpu_ops_tests.json" || status=1
step gpu_comm_tests 120 "$t/comm/tide_comm_tests" --gtest_filter='Nccl*' --gtest_output="json:$res/gpu_comm_tests.json" || status=1
step gpu_train_tests 180 "$t/train/tide_train_tests" --gtest_filter='*Gpu*' --gtest_output="json:$res/gpu_train_tests.json" || status=1
# The same on 2 ranks sharing the GPU, a JSON per rank.
per_rank='exec "$0" "$@" --gtest_output="json:$OUTBASE.rank$OMPI_COMM_WORLD_RANK.json"'
OUTBASE=$res/gpu_comm_tests_np2 step gpu_comm_tests_np2 180 mpirun --oversubscribe -np 2 -x OUTBASE \
  sh -c "$per_rank" "$t/comm/tide_comm_tests" --gtest_filter='Nccl*' || status=1
OUTBASE=$res/gpu_train_tests_np2 step gpu_train_tests_np2 240 mpirun --oversubscribe -np 2 -x OUTBASE \
  sh -c "$per_rank" "$t/train/tide_train_tests" --gtest_filter='*Gpu*' || status=1

# ---- benchmarks beside PyTorch on the same GPU -------------------------------
ex=$build/examples
have_torch=0
python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null && have_torch=1
step async_basics_cuda 180 "$ex/async_basics" --device cuda:0 --json "$res/async_basics_cuda.json"
# The same with the completion thread sleeping after 20 us even while the
# host waits (as before TIDE_CUDA_WAIT_POLL_US): its A/B in this run.
TIDE_CUDA_WAIT_POLL_US=0 step async_basics_cuda_nopoll 180 "$ex/async_basics" --device cuda:0 \
  --json "$res/async_basics_cuda_nopoll.json"
step bench_launch 180 "$ex/bench_launch" --device cuda:0 --json "$res/bench_launch.json"
step bench_kernels 120 "$ex/bench_kernels" --device cuda:0 --json "$res/bench_kernels.json"
# The reductions that take one launch where they can, and the same in two
# launches always (TIDE_CUDA_ONE_LAUNCH=0): the sum of a 1024 x 4096 matrix
# (one row in 1,024 chunks, the most that take one launch; a 4096 x 4096
# one has 4,096 and takes two), and column sums of 256 rows (8 chunks;
# those of 4096 rows have 128).
step bench_kernels_one_launch 120 "$ex/bench_kernels" --device cuda:0 --rows 1024 --cases sum_all \
  --json "$res/bench_kernels_one_launch.json"
TIDE_CUDA_ONE_LAUNCH=0 step bench_kernels_two_launch 120 "$ex/bench_kernels" --device cuda:0 --rows 1024 \
  --cases sum_all --json "$res/bench_kernels_two_launch.json"
step bench_kernels_cols_one_launch 120 "$ex/bench_kernels" --device cuda:0 --rows 256 --cols 65536 \
  --cases sum0,bias_grad --json "$res/bench_kernels_cols_one_launch.json"
TIDE_CUDA_ONE_LAUNCH=0 step bench_kernels_cols_two_launch 120 "$ex/bench_kernels" --device cuda:0 --rows 256 \
  --cols 65536 --cases sum0,bias_grad --json "$res/bench_kernels_cols_two_launch.json"
# The reductions and the chapter's experiments again, traced: each op's work
# on the device (its span) beside the gaps between ops, per op name
# (tide-trace ops), to tell kernels that are slow from host work that paces them.
traced() {  # traced NAME SECONDS COMMAND...: TIDE_TRACE into $res/trace_NAME, its ops summed, the trace gzipped
  local name=$1 secs=$2
  shift 2
  local file=$res/trace_$name/trace.rank0.json
  TIDE_TRACE=$res/trace_$name step "${name}_traced" "$secs" "$@"
  [ -f "$file" ] || { say "$name: no trace written"; return 1; }
  "$root/launch/tide-trace" ops "$file" >"$res/trace_${name}_ops.txt" 2>&1
  gzip -f "$file"
}
traced kernels 120 "$ex/bench_kernels" --device cuda:0 --repeats 3 \
  --cases sum_all,sum1,sum0,mean1,max0,max1,argmax1,bias_grad --json "$res/bench_kernels_traced.json"
traced async_basics 180 "$ex/async_basics" --device cuda:0 --repeats 3 --json "$res/async_basics_traced.json"
step train_cuda 180 "$ex/train_data_parallel" --device cuda --max-steps 600 --no-trace --progress lines \
  --json "$res/train_cuda.json" || status=1
# The same trainer with the reductions in two launches always (its A/B).
TIDE_CUDA_ONE_LAUNCH=0 step train_cuda_two_launch 180 "$ex/train_data_parallel" --device cuda --max-steps 600 \
  --no-trace --progress lines --json "$res/train_cuda_two_launch.json" || status=1
step train_cuda_traced 180 "$ex/train_data_parallel" --device cuda --max-steps 200 --trace "$res/trace_cuda" \
  --progress lines --json "$res/train_cuda_traced.json" || status=1
# The large models of the speed targets: batch 1024 with hidden 2048,2048
# (300 steps), batch 4096 with hidden 4096,4096 (200 steps).
step train_cuda_b1024 120 "$ex/train_data_parallel" --device cuda --batch 1024 --hidden 2048,2048 --max-steps 300 \
  --no-trace --progress lines --json "$res/train_cuda_b1024.json" || status=1
step train_cuda_b4096 120 "$ex/train_data_parallel" --device cuda --batch 4096 --hidden 4096,4096 --max-steps 200 \
  --no-trace --progress lines --json "$res/train_cuda_b4096.json" || status=1
# Two ranks on the one GPU, as scripts/run.sh starts them (defaults).
step train_cuda_np2 240 "$root/launch/tiderun" --local -np 2 "$ex/train_data_parallel" --max-steps 600 --no-trace \
  --progress lines --json "$res/train_cuda_np2.json" || status=1
# Beside it, what the default on a shared GPU (one gradient bucket) is
# weighed against: the small first bucket (two collectives a step), and the
# ranks left unbound (Open MPI binds each of 2 ranks to one core).
step train_cuda_np2_two_buckets 240 "$root/launch/tiderun" --local -np 2 "$ex/train_data_parallel" --max-steps 600 \
  --first-bucket-mb 1 --no-trace --progress lines --json "$res/train_cuda_np2_two_buckets.json" || status=1
step train_cuda_np2_unbound 240 "$root/launch/tiderun" --local -np 2 --bind-to none "$ex/train_data_parallel" \
  --max-steps 600 --no-trace --progress lines --json "$res/train_cuda_np2_unbound.json" || status=1
if [ "$have_torch" -eq 1 ]; then
  step torch_async_basics 180 python3 "$root/examples/peers/torch_async_basics.py" --device cuda:0 \
    --json "$res/torch_async_basics.json"
  step torch_kernels 120 python3 "$root/examples/peers/torch_kernels.py" --device cuda:0 --json "$res/torch_kernels.json"
  step torch_train_mlp 180 python3 "$root/examples/peers/torch_train_mlp.py" --device cuda:0 --steps 600 \
    --json "$res/torch_train_mlp.json"
  step torch_train_b1024 120 python3 "$root/examples/peers/torch_train_mlp.py" --device cuda:0 --batch 1024 \
    --hidden 2048,2048 --steps 300 --json "$res/torch_train_b1024.json"
  step torch_train_b4096 120 python3 "$root/examples/peers/torch_train_mlp.py" --device cuda:0 --batch 4096 \
    --hidden 4096,4096 --steps 200 --json "$res/torch_train_b4096.json"
  step torch_ddp_cuda_np2 240 python3 "$root/examples/peers/torch_ddp_mlp.py" --device cuda --ranks 2 --steps 600 \
    --json "$res/torch_ddp_cuda_np2.json"
else
  say "no PyTorch with CUDA: the PyTorch peers are left out"
fi

# ---- compute-sanitizer ------------------------------------------------------
# The core test that asks for an impossible allocation on purpose is left out
# of memcheck, which reports the out-of-memory answer as an API error; so is
# the one counting tide's own bookkeeping over 10,000 adds (38 s under
# memcheck; its only kernel, the add, is checked by the ops tests').
if command -v compute-sanitizer >/dev/null || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  step memcheck_ops 120 "$cs" --tool memcheck --error-exitcode 9 "$t/ops/tide_ops_tests" --gtest_filter='*Cuda*:*Gpu*' || status=1
  step memcheck_core 90 "$cs" --tool memcheck --error-exitcode 9 "$t/core/tide_core_tests" \
    --gtest_filter='*Cuda*:*gpus*:-*AnImpossibleAllocationIsAnOutOfMemoryError*:*DeviceMemoryReturnsToItsBaseline*' || status=1
  step racecheck_ops 90 "$cs" --tool racecheck --error-exitcode 9 "$t/ops/tide_ops_tests" --gtest_filter='*CudaNn*:*CudaElementwise*:*CudaReduction*' || status=1
else
  say "no compute-sanitizer"
fi

# ---- every test (the cluster tests need network namespaces: left out) -------
# Last, since it mostly repeats what CI runs without a GPU: it gets what is
# left of the check's time.
step ctest 360 ctest --test-dir "$build" -LE cluster -j "$jobs" --output-on-failure \
  --output-junit "$res/ctest_junit.xml" || status=1

python3 "$root/scripts/gpu_summary.py" "$res" >"$res/gpu_summary.txt" 2>&1 || status=1
say "done: status $status"
cp "$log" "$res/run.log"
exit $status
