#!/usr/bin/env bash
# Installs a built tide to a temporary prefix, then configures and builds a
# project outside the tree against it (tests/install/consumer: the README's
# first program, find_package(tide) and tide::tide) and runs it alone and
# under mpirun -np 2. Exits non-zero, saying what failed, on any step.
#
#   scripts/check_install.sh BUILD_DIR [CMAKE_ARGS...]   # args go to the consumer's configure
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?"usage: check_install.sh BUILD_DIR [CMAKE_ARGS...]"}
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "check_install: FAILED: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" || fail "cmake --install $build: $(tail -5 "$work/install.log")"
# Headers internal to the build (check macros, kernels' math) stay out.
for h in tide/core/cuda_check.h tide/ops/normal_f32.h tide/comm/mpi_check.h; do
  [ ! -e "$work/prefix/include/$h" ] || fail "$h was installed: it is internal to the build"
done
[ -e "$work/prefix/include/tide/tide.h" ] || fail "tide/tide.h was not installed"
# The license and the changelog go with every install.
for f in LICENSE CHANGELOG.md; do
  [ -s "$work/prefix/share/doc/tide/$f" ] || fail "$f was not installed in share/doc/tide"
done
cp -r "$root/tests/install/consumer" "$work/src"
cmake -S "$work/src" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release "$@" \
  >"$work/configure.log" 2>&1 || fail "configuring the consumer: $(cat "$work/configure.log")"
cmake --build "$work/build" >"$work/build.log" 2>&1 || fail "building the consumer: $(tail -20 "$work/build.log")"

# z = ones * ones + 2 is 3 everywhere, summed over the ranks; rank 0 alone
# prints it, once, and the summary that counts the 100 steps.
check_output() {
  [ "$(grep -c "sum over $3 ranks: tensor(\[\[$4\., $4\.\]\]" <<<"$1")" -eq 1 ] && [ "$(grep -c "steps 100" <<<"$1")" -eq 1 ] ||
    fail "$2 did not print its result once: $1"
}
out=$("$work/build/first_program" 2>&1) || fail "the consumer failed alone: $out"
check_output "$out" "alone" 1 3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(timeout 120 mpirun --oversubscribe -np 2 "$work/build/first_program" 2>&1) ||
  fail "the consumer failed under mpirun -np 2: $out"
check_output "$out" "mpirun -np 2" 2 6
# The Python package, where the build made one: it imports from the prefix.
pkg="$work/prefix/lib/python3/dist-packages"
python_note=""
if [ -d "$pkg/tide" ]; then
  out=$(cd "$work" && PYTHONPATH="$pkg" timeout 120 /usr/bin/python3 -c \
    'import tide; tide.init(); print("python:", (tide.ones([2]) * 2 + 1).numpy().tolist())' 2>&1) ||
    fail "the installed Python package did not import: $out"
  grep -q "python: \[3.0, 3.0\]" <<<"$out" || fail "the installed Python package computed: $out"
  for f in _tide.pyi py.typed; do
    [ -f "$pkg/tide/$f" ] || fail "the installed Python package lacks $f (its type stubs)"
  done
  python_note=", and the Python package imported from it"
fi
echo "check_install: OK: installed from $build, a consumer configured, built and ran alone and on 2 ranks$python_note"
