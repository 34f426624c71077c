#!/usr/bin/env bash
# Set up, build, run the whole test suite, then the engine tests again in a
# ThreadSanitizer build. Exits non-zero on any failure.
#
# The tests labelled "cluster" run across network-namespace nodes: this
# script brings 2 up (scripts/cluster.sh, as root) before ctest and down
# after, even on failure. Where it cannot (not root, no namespaces), those
# tests skip. A cluster that was already up is used and left up.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${TIDE_JOBS:-$(nproc)}
"$root/scripts/setup.sh"

echo "== build (Release)"
TIDE_BUILD_DIR="$root/build" "$root/scripts/build.sh"

echo "== cluster of 2 namespace nodes"
cluster_ours=0
if "$root/scripts/cluster.sh" status >/dev/null 2>&1; then
  echo "using the cluster already up"
else
  trap '"$root/scripts/cluster.sh" down || true' EXIT
  trap 'exit 130' INT TERM  # so that the EXIT trap runs
  status=0
  "$root/scripts/cluster.sh" up 2 || status=$?
  if [ "$status" -eq 0 ]; then
    cluster_ours=1
  else
    trap - EXIT INT TERM
    echo "no cluster (scripts/cluster.sh up: status $status); the cluster tests will skip"
  fi
fi

echo "== tests"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs"
if [ "$cluster_ours" -eq 1 ]; then
  "$root/scripts/cluster.sh" down
  trap - EXIT INT TERM
fi

echo "== engine tests under ThreadSanitizer (built without CUDA: also checks the CPU-only build)"
TIDE_BUILD_DIR="$root/build-tsan" "$root/scripts/build.sh" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTIDE_SANITIZE=thread -DTIDE_ONLY_CORE_TESTS=ON -DTIDE_BUILD_EXAMPLES=OFF -DTIDE_ENABLE_CUDA=OFF
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest --test-dir "$root/build-tsan" --output-on-failure -j "$jobs" -L core
