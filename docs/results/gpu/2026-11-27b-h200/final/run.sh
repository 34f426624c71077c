#!/usr/bin/env bash
# Third GPU run of the day: the whole build, the core GPU tests and the
# multi-rank GPU tests, bench_launch with SyncPolicy::max_unlaunched_gpu_ops
# at its default and unbounded, the chapter's experiments beside PyTorch,
# the trainer, then the ops GPU tests.
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 PYTHONUNBUFFERED=1
O=${OUT:-/tmp/out}; mkdir -p "$O"; r=$(pwd); b=$r/build-gpu
t0=$SECONDS
s() { local n=$1; shift; local a=$SECONDS; timeout 100 "$@" > "$O/$n.txt" 2>&1; echo "$n rc=$? $((SECONDS-a))s" | tee -a "$O/steps.txt"; }
s configure cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DTIDE_BUILD_PYTHON=OFF -DTIDE_NLOHMANN_JSON_INCLUDE=$r/third_party/nlohmann-json/usr/include
s build cmake --build "$b" -j 16
s core_gpu "$b/tests/core/tide_core_tests" --gtest_filter='*Cuda*:*gpus*'
s ctest_gpu ctest --test-dir "$b" -L gpu -j 4 --output-on-failure
ex=$b/examples
s launch "$ex/bench_launch" --json "$O/launch.json"
s launch_unbounded "$ex/bench_launch" --max-unlaunched-gpu-ops 0 --json "$O/launch_unbounded.json"
s async "$ex/async_basics" --device cuda:0 --json "$O/async.json"
s torch_async python3 examples/peers/torch_async_basics.py --device cuda:0 --json "$O/torch_async.json"
s train "$ex/train_data_parallel" --device cuda --max-steps 600 --no-trace --progress lines --json "$O/train.json"
s ops_gpu "$b/tests/ops/tide_ops_tests" --gtest_filter='*Cuda*:*Gpu*'
echo "total $((SECONDS-t0))s" | tee -a "$O/steps.txt"
cd "$O" && grep -h "PASSED\|FAILED\|tests passed\|tests failed" core_gpu.txt ops_gpu.txt ctest_gpu.txt 2>/dev/null | head -20
grep -h "bench_launch on\|tide throughput\|bare launch\|tide y\|per tide op\|ns in its run" launch*.txt
grep -h "until wait_all\|synchronous" async.txt; grep -h "done_s\|sync_ns\|async_ns" torch_async.json | head
tar czf all.tgz *.txt *.json 2>/dev/null && rm -f *.txt *.json; ls
