#!/usr/bin/env bash
# Configure and build one CMake preset (default: release). Used by ops/run.sh and ops/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
