#!/usr/bin/env bash
# The README's test command (and what .ci/run runs): install what is missing, check layering
# and style (ops/style.sh: banned functions, clang-tidy, clang-format), build, and run the whole Criterion suite through CTest (unit + integration) twice:
# in the release build and in the ASan+UBSan debug build (leaks fail the run); the default
# run also compiles everything with clang (-Werror, -O0: the `clang` preset) without running it,
# so clang-only warnings cannot creep in.
# ctest runs two suites at a time (test presets: execution.jobs 2): the integration suite, which
# mostly waits on brokers and processes, starts first and the unit suites run beside it.
#   ops/test.sh               both builds (default; what CI runs)
#   ops/test.sh --release     release build only (quicker while developing)
#   ops/test.sh --sanitize    ASan+UBSan build only
set -euo pipefail
cd "$(dirname "$0")/.."
also_clang=0
case "${1:-}" in
  "") presets=(release debug); also_clang=1 ;;
  --release) presets=(release) ;;
  --sanitize) presets=(debug) ;;
  *) echo "usage: ops/test.sh [--release|--sanitize]" >&2; exit 2 ;;
esac
bash ops/install-deps.sh
bash ops/check-layering.sh
bash ops/style.sh --format   # banned functions, clang-tidy, clang-format (STYLE.md §8)
for p in "${presets[@]}"; do
  echo "== build and test: preset $p" >&2
  bash ops/build.sh "$p"
  ctest --preset "$p" --output-on-failure
done
if [ "$also_clang" = 1 ]; then
  echo "== build only: preset clang" >&2
  bash ops/build.sh clang
fi
