#!/usr/bin/env bash
# GPU tests and benchmarks for a machine with a GPU but no MPI, GoogleTest
# or OpenBLAS (the lent H200). Two steps:
#
#   scripts/gpu-check.sh bundle        # here: build with CUDA (sm_90) and
#                                      # gather binaries + their libraries in
#                                      # gpu-bundle/payload.tar.xz (git-ignored;
#                                      # carry gpu-bundle: the carry limit is
#                                      # 64 MiB, the files alone are more)
#   scripts/gpu-check.sh run [DIR]     # there: GPU tests, async_basics,
#                                      # bench_launch and the trainer on
#                                      # cuda:0 (also traced), the PyTorch
#                                      # peers; JSON,
#                                      # logs and gpu_summary.json in DIR
#
# DIR defaults to $OUT (the device machine's folder that comes back: then
# one gpu-results.tgz plus gpu_summary.json) or docs/results/gpu.
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
  cp "$root/examples/peers/torch_async_basics.py" "$root/examples/peers/torch_train_mlp.py" \
    "$root/scripts/gpu_summary.py" "$bundle/"
  { git -C "$root" rev-parse HEAD; git -C "$root" status --porcelain --untracked-files=no | grep -q . && echo dirty || true; } \
    >"$bundle/commit.txt"
  grep -qx '/gpu-bundle/' "$root/.git/info/exclude" 2>/dev/null || echo '/gpu-bundle/' >>"$root/.git/info/exclude"
  tar -C "$bundle" -cf - bin lib torch_async_basics.py torch_train_mlp.py gpu_summary.py commit.txt |
    xz -T0 -6 >"$bundle/payload.tar.xz"
  rm -rf "$bundle/bin" "$bundle/lib" "$bundle"/*.py "$bundle/commit.txt"
  du -sh "$bundle"
  echo "carry gpu-bundle, then run: scripts/gpu-check.sh run"
  ;;
run)
  # Results go to DIR (default docs/results/gpu). On the device machine
  # ($OUT set, at most 8 files come back) they are written to a scratch
  # folder and packed as $OUT/gpu-results.tgz, with gpu_summary.json beside.
  if [ -n "${2:-}" ]; then dest=$2; elif [ -n "${OUT:-}" ]; then dest=$OUT; else dest=$root/docs/results/gpu; fi
  mkdir -p "$dest"
  out=$dest
  if [ -n "${OUT:-}" ] && [ "$dest" = "$OUT" ]; then out=$(mktemp -d)/gpu; mkdir -p "$out"; fi
  if [ ! -x "$bundle/bin/tide_core_tests" ] && [ -f "$bundle/payload.tar.xz" ]; then
    xz -dc "$bundle/payload.tar.xz" | tar -C "$bundle" -xf -
  fi
  [ -x "$bundle/bin/tide_core_tests" ] || { echo "gpu-check: no $bundle; make it with 'scripts/gpu-check.sh bundle'" >&2; exit 1; }
  cp "$bundle/commit.txt" "$out/bundle_commit.txt" 2>/dev/null || true
  # Libraries for tide's binaries only (PyTorch keeps its own): the bundle's,
  # then the toolkit's, then those of PyTorch's nvidia wheels (NCCL, cuBLAS).
  pip_libs=$(python3 - <<'PY' 2>"$out/pip_libs.err" || true
import glob, os, site
dirs = set()
for s in site.getsitepackages():
    for f in glob.glob(os.path.join(s, "nvidia", "*", "lib", "lib*.so*")):
        dirs.add(os.path.dirname(f))
print(":".join(sorted(dirs)))
PY
)
  libs=$bundle/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib${pip_libs:+:$pip_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  tide() { env LD_LIBRARY_PATH="$libs" timeout 240 "$@"; }
  # One process, one GPU: NCCL's bootstrap needs no network, and the GPU
  # machine may have none but loopback. Its warnings go to the logs.
  export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$out/gpu_machine.txt" 2>&1 || true
  # Before anything runs: every library of every binary must resolve.
  for exe in "$bundle"/bin/*; do
    echo "== $(basename "$exe")"
    env LD_LIBRARY_PATH="$libs" ldd -r "$exe" 2>&1 | grep -E "not found|undefined symbol|libnccl|libcublas|libcudart|libstdc" || true
  done >"$out/preflight.txt"
  if grep -Eq "not found|undefined symbol" "$out/preflight.txt"; then
    echo "gpu-check: libraries do not resolve on this machine (see preflight.txt):" >&2
    grep -E "^==|not found|undefined symbol" "$out/preflight.txt" >&2
  fi
  status=0
  # GPU tests: every test with a GPU in its name, on the async and naive engines.
  tide "$bundle/bin/tide_core_tests" --gtest_filter='*Cuda*:*gpus*' --gtest_output="json:$out/gpu_core_tests.json" \
    >"$out/gpu_core_tests.log" 2>&1 || status=1
  tide "$bundle/bin/tide_ops_tests" --gtest_filter='*Cuda*:*Gpu*' --gtest_output="json:$out/gpu_ops_tests.json" \
    >"$out/gpu_ops_tests.log" 2>&1 || status=1
  # NCCL collectives and the reducer on cuda:0, in a one-rank world (no mpirun).
  tide "$bundle/bin/tide_comm_tests" --gtest_filter='Nccl*' --gtest_output="json:$out/gpu_comm_tests.json" \
    >"$out/gpu_comm_tests.log" 2>&1 || status=1
  tide "$bundle/bin/tide_train_tests" --gtest_filter='*Gpu*' --gtest_output="json:$out/gpu_train_tests.json" \
    >"$out/gpu_train_tests.log" 2>&1 || status=1
  tail -n 3 "$out/gpu_core_tests.log" "$out/gpu_ops_tests.log" "$out/gpu_comm_tests.log" "$out/gpu_train_tests.log" || true
  # Benchmarks, side by side: tide and PyTorch on the same GPU.
  tide "$bundle/bin/async_basics" --device cuda:0 --json "$out/async_basics_cuda.json" >"$out/async_basics_cuda.txt" 2>&1 || status=1
  timeout 240 python3 "$bundle/torch_async_basics.py" --device cuda:0 --json "$out/torch_async_basics.json" \
    >"$out/torch_async_basics.txt" 2>&1 || status=1
  tide "$bundle/bin/bench_launch" --device cuda:0 --json "$out/bench_launch.json" >"$out/bench_launch.txt" 2>&1 || status=1
  # The training example on cuda:0 (one rank) and the same MLP in PyTorch.
  tide "$bundle/bin/train_data_parallel" --device cuda --max-steps 600 --no-trace --progress lines \
    --json "$out/train_cuda.json" >"$out/train_cuda.txt" 2>&1 || status=1
  timeout 240 python3 "$bundle/torch_train_mlp.py" --device cuda:0 --steps 600 --json "$out/torch_train_mlp.json" \
    >"$out/torch_train_mlp.txt" 2>&1 || status=1
  # The trainer traced on cuda:0: its GPU spans on the device's clock, which
  # gpu_summary checks (no two spans of a stream overlap; the clock report).
  tide "$bundle/bin/train_data_parallel" --device cuda --max-steps 200 --trace "$out/trace_cuda" --progress lines \
    --json "$out/train_cuda_traced.json" >"$out/train_cuda_traced.txt" 2>&1 || status=1
  python3 "$bundle/gpu_summary.py" "$out" || status=1
  if [ "$out" != "$dest" ]; then
    tar -C "$out" -czf "$dest/gpu-results.tgz" .
    cp "$out/gpu_summary.json" "$dest/" 2>/dev/null || true
  fi
  exit $status
  ;;
*)
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
  ;;
esac
