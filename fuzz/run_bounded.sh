#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time over its seed corpora, as the CTest test
# <name>_fuzz_run (label `fuzzing`, scripts/test.sh's fuzz tier) does:
#   fuzz/run_bounded.sh <libFuzzer binary> <seed dir>...
# FUZZ_SECONDS (default 6) bounds the run. The seed directories are only read: new inputs go to
# a temporary corpus. Fails on any crash, leak, timeout (10 s per input), out-of-memory or
# sanitizer report, printing the log's end and each offending input in base64, to be minimised
# with scripts/fuzz.sh's recipe and added to fuzz/corpus/<name>/ with its fix.
set -euo pipefail
binary=$1
shift
seconds=${FUZZ_SECONDS:-6}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus" "$work/artifacts"
if ! "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" "$@" >"$work/log" 2>&1; then
  tail -n 60 "$work/log"
  for input in "$work"/artifacts/*; do
    [ -f "$input" ] || continue
    echo "fuzz: $(basename "$input") (base64): $(base64 -w0 "$input")"
  done
  echo "fuzz: $(basename "$binary") FAILED"
  exit 1
fi
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
new=$(sed -n 's/^stat::new_units_added: *//p' "$work/log")
echo "fuzz: $(basename "$binary"): ${runs:-?} inputs in ${seconds} s, ${new:-?} new, no failure"
