#!/usr/bin/env bash
# Set up, build, run the whole test suite, then the engine tests again in a
# ThreadSanitizer build. Exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=${TIDE_JOBS:-$(nproc)}
"$root/scripts/setup.sh"

echo "== build (Release)"
TIDE_BUILD_DIR="$root/build" "$root/scripts/build.sh"
echo "== tests"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs"

echo "== engine tests under ThreadSanitizer"
TIDE_BUILD_DIR="$root/build-tsan" "$root/scripts/build.sh" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTIDE_SANITIZE=thread -DTIDE_ONLY_CORE_TESTS=ON -DTIDE_BUILD_EXAMPLES=OFF
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ctest --test-dir "$root/build-tsan" --output-on-failure -j "$jobs" -L core
