#!/usr/bin/env bash
# The README's test command (and what .ci/run runs): install what is missing, build, run the
# whole Criterion suite through CTest (unit + integration), then the lint checks.
#   ops/test.sh               release build, every test
#   ops/test.sh --sanitize    the same suite in the ASan+UBSan debug build
set -euo pipefail
cd "$(dirname "$0")/.."
preset=release
[ "${1:-}" = "--sanitize" ] && preset=debug
bash ops/install-deps.sh
bash ops/build.sh "$preset"
bash ops/check-layering.sh
ctest --preset "$preset" --output-on-failure
