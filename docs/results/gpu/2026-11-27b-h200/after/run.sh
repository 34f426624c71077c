#!/usr/bin/env bash
# Second GPU run of the day: build, GPU tests, the launch split and its
# run-ahead A/B, the randn + matmul rounds beside PyTorch (traced too), the
# sums in one launch and two, the trainer beside PyTorch.
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 PYTHONUNBUFFERED=1
O=${OUT:-/tmp/out}; mkdir -p "$O"; r=$(pwd); b=$r/build-gpu
t0=$SECONDS
s() { local n=$1; shift; local a=$SECONDS; timeout 100 "$@" > "$O/$n.txt" 2>&1; echo "$n rc=$? $((SECONDS-a))s" | tee -a "$O/steps.txt"; }
s configure cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DTIDE_BUILD_PYTHON=OFF -DTIDE_NLOHMANN_JSON_INCLUDE=$r/third_party/nlohmann-json/usr/include
s build cmake --build "$b" -j 16 --target tide_core_tests tide_ops_tests tide_comm_tests tide_train_tests bench_launch bench_kernels async_basics train_data_parallel
s core_gpu "$b/tests/core/tide_core_tests" --gtest_filter='*Cuda*:*gpus*'
s ops_gpu "$b/tests/ops/tide_ops_tests" --gtest_filter='*Cuda*:*Gpu*'
s ctest_gpu ctest --test-dir "$b" -L gpu -j 4 --output-on-failure
ex=$b/examples
s launch "$ex/bench_launch" --json "$O/launch.json"
s launch_q1024 "$ex/bench_launch" --max-queued-ops 1024 --json "$O/launch_q1024.json"
s launch_2000 "$ex/bench_launch" --ops 2000 --json "$O/launch_2000.json"
s async "$ex/async_basics" --device cuda:0 --json "$O/async.json"
TIDE_TRACE=$O/trace_async s async_traced "$ex/async_basics" --device cuda:0 --repeats 3 --json "$O/async_traced.json"
s torch_async python3 examples/peers/torch_async_basics.py --device cuda:0 --json "$O/torch_async.json"
s kernels "$ex/bench_kernels" --device cuda:0 --json "$O/kernels.json"
s kernels_one "$ex/bench_kernels" --device cuda:0 --rows 1024 --cases sum_all --json "$O/kernels_one.json"
TIDE_CUDA_ONE_LAUNCH=0 s kernels_two "$ex/bench_kernels" --device cuda:0 --rows 1024 --cases sum_all --json "$O/kernels_two.json"
s torch_kernels python3 examples/peers/torch_kernels.py --device cuda:0 --json "$O/torch_kernels.json"
s train "$ex/train_data_parallel" --device cuda --max-steps 600 --no-trace --progress lines --json "$O/train.json"
s torch_train python3 examples/peers/torch_train_mlp.py --device cuda:0 --steps 600 --json "$O/torch_train.json"
s train_np2 "$r/launch/tiderun" --local -np 2 "$ex/train_data_parallel" --max-steps 600 --no-trace --progress lines --json "$O/train_np2.json"
echo "total $((SECONDS-t0))s" | tee -a "$O/steps.txt"
cd "$O" && grep -h "PASSED\|FAILED\|tests passed\|tests failed" core_gpu.txt ops_gpu.txt ctest_gpu.txt 2>/dev/null | head -20
grep -h "bench_launch on\|tide throughput\|bare launch\|tide y\|per tide op\|ns in its run" launch*.txt
grep -h "until wait_all\|synchronous\|verdict" async.txt; grep -h "tide\|torch\|ms" torch_async.txt | head -12
grep -h "sum_all\|bias_grad\|argmax1" kernels*.txt
[ -f trace_async/trace.rank0.json ] && gzip -f trace_async/trace.rank0.json && mv trace_async/trace.rank0.json.gz trace_async.rank0.json.gz
tar czf all.tgz *.txt *.json trace_async.rank0.json.gz 2>/dev/null && rm -f *.txt *.json; ls
