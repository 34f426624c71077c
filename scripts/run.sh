#!/usr/bin/env bash
# The main job: set up, build, and run the async_basics example (the
# experiments of the "Asynchronous Computation" chapter, on tide).
# Arguments go to the example (try --help).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" >/dev/null
exec "${TIDE_BUILD_DIR:-$root/build}/examples/async_basics" "$@"
