#!/usr/bin/env bash
# Second GPU run: build, GPU tests, launch/round trip A/B, kernels, trainers.
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 PYTHONUNBUFFERED=1
O=${OUT:-/tmp/out}; mkdir -p "$O"; r=$(pwd); b=$r/build-gpu
t0=$SECONDS
s() { local n=$1; shift; local a=$SECONDS; timeout 120 "$@" > "$O/$n.txt" 2>&1; echo "$n rc=$? $((SECONDS-a))s" | tee -a "$O/steps.txt"; }
s configure cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DTIDE_BUILD_PYTHON=OFF -DTIDE_NLOHMANN_JSON_INCLUDE=$r/third_party/nlohmann-json/usr/include
s build cmake --build "$b" -j 16 --target tide_core_tests tide_ops_tests bench_launch bench_kernels async_basics train_data_parallel
s core_gpu "$b/tests/core/tide_core_tests" --gtest_filter='*Cuda*:*gpus*'
s ops_gpu "$b/tests/ops/tide_ops_tests" --gtest_filter='*Cuda*:*Gpu*'
ex=$b/examples
s launch "$ex/bench_launch" --json "$O/launch.json"
TIDE_INLINE_OP_KB=0 s launch_noinline "$ex/bench_launch" --json "$O/launch_noinline.json"
s async "$ex/async_basics" --device cuda:0 --json "$O/async.json"
TIDE_INLINE_OP_KB=0 s async_noinline "$ex/async_basics" --device cuda:0 --json "$O/async_noinline.json"
s torch_async python3 examples/peers/torch_async_basics.py --device cuda:0 --json "$O/torch_async.json"
s kernels "$ex/bench_kernels" --device cuda:0 --json "$O/kernels.json"
s torch_kernels python3 examples/peers/torch_kernels.py --device cuda:0 --json "$O/torch_kernels.json"
s train "$ex/train_data_parallel" --device cuda --max-steps 600 --no-trace --progress lines --json "$O/train.json"
s train_b1024 "$ex/train_data_parallel" --device cuda --batch 1024 --hidden 2048,2048 --max-steps 300 --no-trace --progress lines --json "$O/train_b1024.json"
s torch_train python3 examples/peers/torch_train_mlp.py --device cuda:0 --steps 600 --json "$O/torch_train.json"
s memcheck_red compute-sanitizer --tool memcheck --error-exitcode 9 "$b/tests/ops/tide_ops_tests" --gtest_filter='*CudaReduction*:*CudaElementwise*'
s racecheck_red compute-sanitizer --tool racecheck --error-exitcode 9 "$b/tests/ops/tide_ops_tests" --gtest_filter='*CudaReduction*'
s memcheck_core compute-sanitizer --tool memcheck --error-exitcode 9 "$b/tests/core/tide_core_tests" --gtest_filter='*CudaEngine*:-*AnImpossibleAllocation*:*DeviceMemoryReturnsToItsBaseline*'
echo "total $((SECONDS-t0))s" | tee -a "$O/steps.txt"
cd "$O" && grep -h "PASSED\|FAILED\|ERROR SUMMARY\|RACECHECK SUMMARY" core_gpu.txt ops_gpu.txt memcheck_*.txt racecheck_red.txt 2>/dev/null | head -30
grep -h "tide throughput\|bare launch\|tide y" launch*.txt; grep -h "synchronous\|until wait_all" async*.txt; grep -A14 "bench_kernels on" kernels.txt
tar czf all.tgz *.txt *.json && rm -f *.txt *.json; ls
