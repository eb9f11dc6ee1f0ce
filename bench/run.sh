#!/usr/bin/env bash
# Builds the release preset and runs the benchmarks, printing Google Benchmark's JSON.
#   bench/run.sh                 # all benchmarks
#   bench/run.sh --benchmark_filter=Reconcile
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset release >/dev/null
cmake --build --preset release --target abi_call_bench >&2
exec build/release/bench/abi_call_bench --benchmark_format=json --benchmark_min_time=0.5 "$@"
