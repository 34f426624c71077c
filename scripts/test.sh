#!/usr/bin/env bash
# Set up, build, run the whole test suite and check the installed package;
# then the whole suite again under AddressSanitizer + UndefinedBehavior-
# Sanitizer, and the engine and comm tests under ThreadSanitizer (both built
# without CUDA). Exits non-zero on any failure.
#
# The tests labelled "cluster" run across network-namespace nodes: this
# script brings 2 up (scripts/cluster.sh, as root) and a Slurm on them
# (scripts/slurm.sh) before ctest, and both down after, even on failure.
# Where it cannot (not root, no namespaces), those tests skip. A cluster or
# Slurm that was already up is used and left up.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${TIDE_JOBS:-$(nproc)}
# Slurm's packages for the cluster tests, where this user may install them;
# elsewhere those tests skip.
if [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null; then
  "$root/scripts/setup.sh" --slurm
else
  "$root/scripts/setup.sh"
fi

echo "== build (Release)"
TIDE_BUILD_DIR="$root/build" "$root/scripts/build.sh"

echo "== cluster of 2 namespace nodes, and Slurm on them"
cluster_ours=0 slurm_ours=0
# Whatever brought up here goes down at the end, even on failure: Slurm
# first, then the nodes it runs on.
take_down() {
  if [ "$slurm_ours" -eq 1 ]; then "$root/scripts/slurm.sh" down || true; slurm_ours=0; fi
  if [ "$cluster_ours" -eq 1 ]; then "$root/scripts/cluster.sh" down || true; cluster_ours=0; fi
}
trap take_down EXIT
trap 'exit 130' INT TERM  # so that the EXIT trap runs
if "$root/scripts/cluster.sh" status >/dev/null 2>&1; then
  echo "using the cluster already up"
else
  status=0
  "$root/scripts/cluster.sh" up 2 || status=$?
  if [ "$status" -eq 0 ]; then
    cluster_ours=1
  else
    echo "no cluster (scripts/cluster.sh up: status $status); the cluster tests will skip"
  fi
fi
if "$root/scripts/slurm.sh" status >/dev/null 2>&1; then
  echo "using the Slurm already up"
elif "$root/scripts/cluster.sh" status >/dev/null 2>&1; then
  status=0
  slurm_ours=1  # before "up": a run killed during it still takes down what it started
  "$root/scripts/slurm.sh" up || status=$?
  if [ "$status" -ne 0 ]; then
    echo "no Slurm (scripts/slurm.sh up: status $status); the Slurm tests will skip"
  fi
fi

echo "== tests"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs"

echo "== the installed package: find_package(tide) in a project outside the tree"
"$root/scripts/check_install.sh" "$root/build"

# The sanitizer builds are without CUDA: they also check the CPU-only build.
san="$root/tests/sanitizers"
echo "== every test under AddressSanitizer + UndefinedBehaviorSanitizer (multi-rank and cluster included)"
# Debug (-O0): the build takes about half the time of an optimized one, and
# the tests wait on peers far more than they compute.
TIDE_BUILD_DIR="$root/build-asan" "$root/scripts/build.sh" -DCMAKE_BUILD_TYPE=Debug \
  -DTIDE_SANITIZE=address,undefined -DTIDE_ENABLE_CUDA=OFF
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
# Leaks are looked for in the suites that never start MPI. Open MPI leaves
# allocations at exit from components it has unloaded by then, so LeakSanitizer
# can neither name nor suppress them (tests/sanitizers/lsan.supp covers what it
# can name); in the multi-rank suites every other check stays on.
ASAN_OPTIONS="detect_leaks=1" LSAN_OPTIONS="suppressions=$san/lsan.supp print_suppressions=0" \
  ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" -L "core|ops|fuzz"
ASAN_OPTIONS="detect_leaks=0" ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" -LE "core|ops|fuzz"
unset UBSAN_OPTIONS
echo "== the installed package of the CPU-only build"
ASAN_OPTIONS="detect_leaks=0" "$root/scripts/check_install.sh" "$root/build-asan" -DCMAKE_CXX_FLAGS=-fsanitize=address,undefined \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined

take_down
trap - EXIT INT TERM

echo "== engine and comm tests (multi-rank, comm thread, liveness, desync check) under ThreadSanitizer"
TIDE_BUILD_DIR="$root/build-tsan" "$root/scripts/build.sh" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTIDE_SANITIZE=thread -DTIDE_TESTS="core;comm" -DTIDE_BUILD_EXAMPLES=OFF -DTIDE_ENABLE_CUDA=OFF
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$san/tsan.supp" \
  ctest --test-dir "$root/build-tsan" --output-on-failure -j "$jobs" -L "core|comm"
