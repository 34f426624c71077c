#!/usr/bin/env bash
# GPU tests and benchmarks for a machine with a GPU but no MPI, GoogleTest
# or OpenBLAS (the lent H200). Two steps:
#
#   scripts/gpu-check.sh bundle        # here: build with CUDA (sm_90) and
#                                      # gather binaries + their libraries in
#                                      # gpu-bundle/payload.tar.xz (git-ignored;
#                                      # carry gpu-bundle: the carry limit is
#                                      # 64 MiB, the files alone are more)
#   scripts/gpu-check.sh run [OUT]     # there: GPU tests, async_basics on
#                                      # cuda:0, the PyTorch peer and
#                                      # bench_launch; JSON and logs in OUT
#
# OUT defaults to $OUT (the folder that comes back) or docs/results/gpu.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$root/gpu-bundle
cmd=${1:-}

case "$cmd" in
bundle)
  "$root/scripts/setup.sh"
  TIDE_BUILD_DIR="$root/build-gpu" "$root/scripts/build.sh" -DCMAKE_CUDA_ARCHITECTURES=90
  if ! grep -Eq "^CMAKE_CUDA_COMPILER:(FILEPATH|STRING)=/" "$root/build-gpu/CMakeCache.txt"; then
    echo "gpu-check: no CUDA compiler found; the bundle would have no GPU code" >&2
    exit 1
  fi
  rm -rf "$bundle"
  mkdir -p "$bundle/bin" "$bundle/lib"
  for exe in tests/tide_core_tests tests/tide_ops_tests tests/tide_comm_tests tests/tide_train_tests examples/async_basics examples/bench_launch \
    examples/train_data_parallel; do
    cp "$root/build-gpu/$exe" "$bundle/bin/"
    strip "$bundle/bin/$(basename "$exe")"
  done
  # Libraries the GPU machine lacks: everything but glibc, the CUDA driver and
  # the CUDA toolkit's own (found there under /usr/local/cuda, or in PyTorch's
  # wheels: NCCL alone is over 200 MB).
  for exe in "$bundle"/bin/*; do
    ldd "$exe" | awk '/=> \//{print $3}'
  done | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libcuda.so*|libcudart*|libcublas*|libnccl*) ;;
      *) cp -L "$lib" "$bundle/lib/" ;;
    esac
  done
  cp "$root/examples/peers/torch_async_basics.py" "$root/examples/peers/torch_train_mlp.py" "$bundle/"
  grep -qx '/gpu-bundle/' "$root/.git/info/exclude" 2>/dev/null || echo '/gpu-bundle/' >>"$root/.git/info/exclude"
  tar -C "$bundle" -cf - bin lib torch_async_basics.py torch_train_mlp.py | xz -T0 -6 >"$bundle/payload.tar.xz"
  rm -rf "$bundle/bin" "$bundle/lib" "$bundle"/*.py
  du -sh "$bundle"
  echo "carry gpu-bundle, then run: scripts/gpu-check.sh run"
  ;;
run)
  out=${2:-${OUT:-$root/docs/results/gpu}}
  mkdir -p "$out"
  if [ ! -x "$bundle/bin/tide_core_tests" ] && [ -f "$bundle/payload.tar.xz" ]; then
    xz -dc "$bundle/payload.tar.xz" | tar -C "$bundle" -xf -
  fi
  [ -x "$bundle/bin/tide_core_tests" ] || { echo "gpu-check: no $bundle; make it with 'scripts/gpu-check.sh bundle'" >&2; exit 1; }
  cuda_libs=/usr/local/cuda/lib64:/usr/local/cuda/lib
  # The toolkit's cuBLAS, else the one PyTorch's wheels bring.
  pip_libs=$(python3 - <<'PY' 2>/dev/null || true
import glob, os, site
dirs = set()
for s in site.getsitepackages():
    for f in glob.glob(os.path.join(s, "nvidia", "*", "lib", "lib*.so*")):
        dirs.add(os.path.dirname(f))
print(":".join(sorted(dirs)))
PY
)
  export LD_LIBRARY_PATH=$bundle/lib:$cuda_libs${pip_libs:+:$pip_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # One process, one GPU: NCCL's bootstrap needs no network, and the GPU
  # machine may have none but loopback. Its warnings go to the logs.
  export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$out/gpu_machine.txt" 2>&1 || true
  status=0
  # GPU tests: every test with a GPU in its name, on the async and naive engines.
  "$bundle/bin/tide_core_tests" --gtest_filter='*Cuda*:*gpus*' --gtest_output="json:$out/gpu_core_tests.json" \
    >"$out/gpu_core_tests.log" 2>&1 || status=1
  "$bundle/bin/tide_ops_tests" --gtest_filter='*Cuda*:*Gpu*' --gtest_output="json:$out/gpu_ops_tests.json" \
    >"$out/gpu_ops_tests.log" 2>&1 || status=1
  # NCCL collectives and the reducer on cuda:0, in a one-rank world (no mpirun).
  "$bundle/bin/tide_comm_tests" --gtest_filter='Nccl*' --gtest_output="json:$out/gpu_comm_tests.json" \
    >"$out/gpu_comm_tests.log" 2>&1 || status=1
  "$bundle/bin/tide_train_tests" --gtest_filter='*Gpu*' --gtest_output="json:$out/gpu_train_tests.json" \
    >"$out/gpu_train_tests.log" 2>&1 || status=1
  tail -n 3 "$out/gpu_core_tests.log" "$out/gpu_ops_tests.log" "$out/gpu_comm_tests.log" "$out/gpu_train_tests.log" || true
  # Benchmarks, side by side: tide and PyTorch on the same GPU.
  "$bundle/bin/async_basics" --device cuda:0 --json "$out/async_basics_cuda.json" | tee "$out/async_basics_cuda.txt" || status=1
  python3 "$bundle/torch_async_basics.py" --device cuda:0 --json "$out/torch_async_basics.json" >/dev/null || status=1
  "$bundle/bin/bench_launch" --device cuda:0 --json "$out/bench_launch.json" | tee "$out/bench_launch.txt" || status=1
  # The training example on cuda:0 (one rank) and the same MLP in PyTorch.
  "$bundle/bin/train_data_parallel" --device cuda --max-steps 600 --no-trace --progress lines \
    --json "$out/train_cuda.json" >"$out/train_cuda.txt" 2>&1 || status=1
  python3 "$bundle/torch_train_mlp.py" --device cuda:0 --steps 600 --json "$out/torch_train_mlp.json" \
    | tee "$out/torch_train_mlp.txt" || status=1
  python3 - "$out" <<'PY' || status=1
import json, sys, os
out = sys.argv[1]
status = 0
s = {}


def load(name):
    return json.load(open(os.path.join(out, name)))


def entry(key, make):
    """One comparison; a missing or broken result is recorded, not fatal."""
    global status
    try:
        s[key] = make()
    except (OSError, KeyError, ValueError, ZeroDivisionError) as e:
        s[key] = {"error": f"{type(e).__name__}: {e}"}
        status = 1


def tiny_ops():
    t, p = load("async_basics_cuda.json"), load("torch_async_basics.json")
    tide_op = t["increments"]["async_s"] / t["increments"]["count"] * 1e9
    torch_op = p["increments"]["async_ns_per_op"]
    return {"tide": tide_op, "torch": torch_op, "ratio": tide_op / torch_op, "target": "<= 0.5"}


def matmul():
    t, p = load("async_basics_cuda.json"), load("torch_async_basics.json")
    a, b = t["matmul"]["tide_done_s"], p["matmul"]["torch_done_s"]
    return {"tide": a, "torch": b, "ratio": a / b, "target": "<= 1.05"}


def train():
    a = load("train_cuda.json")["result"]["samples_per_s"]
    b = load("torch_train_mlp.json")["result"]["samples_per_s"]
    return {"tide": a, "torch": b, "ratio": a / b, "target": ">= 1.0"}


entry("tiny_op_async_ns", tiny_ops)
entry("matmul_done_s", matmul)
entry("launch_throughput_vs_bare",
      lambda: {"value": load("bench_launch.json")["throughput_vs_bare"], "target": ">= 0.9"})
entry("train_samples_per_s", train)
json.dump(s, open(os.path.join(out, "gpu_summary.json"), "w"), indent=2)
print(json.dumps(s, indent=2))
sys.exit(status)
PY
  exit $status
  ;;
*)
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
  ;;
esac
