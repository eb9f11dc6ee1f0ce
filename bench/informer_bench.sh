#!/usr/bin/env bash
# Starts a private local control plane, runs bench/informer_bench.cc against it (release
# build) and stops it. Prints one JSON object.
#   bench/informer_bench.sh [objects=10000] [--keep-write-bookkeeping] [--kubectl-applied]
set -euo pipefail
cd "$(dirname "$0")/.."
state=$(mktemp -d /tmp/banlieue-informer-bench.XXXXXX)
trap 'deploy/local/down --purge --state-dir "$state" >/dev/null 2>&1 || true' EXIT
deploy/local/build >&2
cmake --preset release >/dev/null
cmake --build --preset release --target informer_bench >&2
deploy/local/up --state-dir "$state" >&2
build/release/bench/informer_bench "$state/kubeconfig" "${1:-10000}" "${@:2}"
