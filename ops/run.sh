#!/usr/bin/env bash
# The README's run command: install what is missing, build, and run the whole pipeline on
# the embedded default (embedded broker + simulator + every stage). Extra arguments go to
# `gcdp run` (e.g. --duration 60; see `gcdp run --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ops/install-deps.sh
bash ops/build.sh release >/dev/null
exec ./build/release/app/gcdp run "$@"
