#!/usr/bin/env bash
# Install every Debian bookworm package gcdp needs to build, run, test and benchmark.
# Used by both README commands (ops/run.sh and ops/test.sh) and so by CI.
# Idempotent: packages already present are skipped without touching apt.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config clang clang-tidy clang-format libclang-rt-dev  # libclang-rt-dev: libFuzzer (preset fuzz); clang-tidy, clang-format: ops/style.sh
  librdkafka-dev libjansson-dev libsimdjson-dev libuv1-dev libgsl-dev
  libopenblas-dev liblapacke-dev libsodium-dev libmicrohttpd-dev liblbfgs-dev
  libcriterion-dev libsqlite3-dev  # libsqlite3-dev: the ledger store (core/src/dp_ledger_db.c)
  kcat graphviz gnuplot-nox curl procps
  python3 python3-jsonschema python3-kafka  # python3-kafka: docs/consumers.md, a non-librdkafka client
  docker-compose python3-yaml  # tests/deploy: `docker-compose config` of docker/docker-compose.yml
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
