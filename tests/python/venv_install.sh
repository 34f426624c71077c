#!/usr/bin/env bash
# `pip install .` of the source tree into a fresh virtual environment (with
# the system's site packages: Debian's numpy and pytest), then the Python
# tests and an example from there, away from the source tree, and tiderun
# from the environment's bin. Skips (status 77), saying why, when the build
# requirements (scikit-build-core, pybind11) cannot be fetched from PyPI.
#   venv_install.sh SOURCE_DIR WORK_DIR
set -uo pipefail
src=$1 work=$2
py=/usr/bin/python3
rm -rf "$work"
mkdir -p "$work"
"$py" -m venv --system-site-packages "$work/venv" || { echo "FAILED: python3 -m venv (python3-venv)"; exit 1; }
venv=$work/venv
# The library without CUDA, tests and examples: the module is what is tested
# here; a user's pip install builds CUDA when it finds it.
log=$work/pip.log
if ! "$venv/bin/pip" install --disable-pip-version-check --timeout 20 --retries 1 \
    --config-settings=cmake.define.TIDE_ENABLE_CUDA=OFF --config-settings=build-dir="$work/build" \
    "$src" >"$log" 2>&1; then
  if grep -qE "Could not find a version that satisfies|NewConnectionError|Temporary failure in name resolution|No matching distribution" "$log"; then
    echo "SKIP: pip could not fetch the build requirements from PyPI (offline?): $(grep -m1 -E 'ERROR|WARNING' "$log")"
    exit 77
  fi
  tail -30 "$log"
  echo "FAILED: pip install of $src"
  exit 1
fi
echo "installed: $(grep -m1 -E '^Successfully installed' "$log")"
cd "$work" || exit 1  # not the source tree: the package must come from the venv
where=$("$venv/bin/python" -c "import tide, os; print(os.path.dirname(tide.__file__), tide.__version__)") ||
  { echo "FAILED: import tide from the venv"; exit 1; }
echo "tide from $where"
case "$where" in "$venv"/*) ;; *) echo "FAILED: tide was not imported from the venv"; exit 1 ;; esac
pkg=${where% *}
for f in _tide.pyi py.typed; do
  [ -f "$pkg/$f" ] || { echo "FAILED: the package lacks $f (type stubs)"; exit 1; }
done
"$venv/bin/python" "$src/python/tools/make_stubs.py" --check "$pkg/_tide.pyi" ||
  { echo "FAILED: the installed stubs do not match the installed module"; exit 1; }
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests/python/test_tide.py" "$src/tests/python/test_safetensors.py" ||
  { echo "FAILED: the Python tests from the venv"; exit 1; }
"$venv/bin/python" "$src/examples/python/async_basics.py" --repeats 1 --size 64 --increments 200 | tail -2 ||
  { echo "FAILED: the example from the venv"; exit 1; }
out=$("$venv/bin/tiderun" -np 2 --local "$venv/bin/python" -c \
  "import sys, tide; rt = tide.init(); s = tide.all_reduce(tide.ones([1])).item()
sys.stdout.write('rank %d of %d %.1f\n' % (rt.rank, rt.size, s)); sys.stdout.flush()" 2>&1) ||
  { echo "$out"; echo "FAILED: tiderun from the venv"; exit 1; }
echo "$out"
[ "$(grep -c '^rank [01] of 2 2.0$' <<< "$out")" -eq 2 ] || { echo "FAILED: the 2-rank run from the venv"; exit 1; }
echo "OK: pip install into a venv, tests, example and tiderun from it"
