#!/usr/bin/env bash
# Configures and builds tide in Release under build/ (or $TIDE_BUILD_DIR).
# Extra arguments go to cmake's configure step.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TIDE_BUILD_DIR:-$root/build}
jobs=${TIDE_JOBS:-$(nproc)}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j "$jobs"
