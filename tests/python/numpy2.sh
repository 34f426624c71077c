#!/usr/bin/env bash
# The module built here (against the system's pybind11) under numpy 2 from
# PyPI, as a user's virtual environment has it: the Python tests in a fresh
# venv holding only numpy 2 and pytest. Skips (status 77), saying why, when
# PyPI cannot be reached.
#   numpy2.sh SOURCE_DIR WORK_DIR   (PYTHONPATH points at the build's package)
set -uo pipefail
src=$1 work=$2
rm -rf "$work"
mkdir -p "$work"
/usr/bin/python3 -m venv "$work/venv" || { echo "FAILED: python3 -m venv (python3-venv)"; exit 1; }
log=$work/pip.log
if ! "$work/venv/bin/pip" install --disable-pip-version-check --timeout 20 --retries 1 "numpy>=2" pytest >"$log" 2>&1; then
  if grep -qE "Could not find a version that satisfies|NewConnectionError|Temporary failure in name resolution|No matching distribution" "$log"; then
    echo "SKIP: pip could not fetch numpy 2 from PyPI (offline?): $(grep -m1 -E 'ERROR|WARNING' "$log")"
    exit 77
  fi
  tail -20 "$log"
  echo "FAILED: pip install numpy>=2 pytest"
  exit 1
fi
"$work/venv/bin/python" -c "import numpy, sys; print('numpy', numpy.__version__); sys.exit(int(numpy.__version__.split('.')[0]) < 2)" ||
  { echo "FAILED: the venv's numpy is not numpy 2"; exit 1; }
cd "$work" || exit 1
exec "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests/python"
