#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (clang, ASan+UBSan; preset `fuzz`, build/fuzz), each for a
# bounded time over its seed corpus, and fails on the first target that crashes, hangs, leaks or
# breaks a property check. The unit tier only replays the corpora (fuzz/CMakeLists.txt); this
# script searches for new inputs.
#   scripts/fuzz.sh                          # every target, 20 s each
#   scripts/fuzz.sh --seconds 120 kubeconfig watch_stream
#   scripts/fuzz.sh --list                   # the target names
#   JOBS=1 NICE=19 scripts/fuzz.sh ...       # build jobs and niceness (defaults: nproc, 0)
# New inputs that reach new code go to build/fuzz/corpus/<target>/ (kept between runs; add the
# small, interesting ones to fuzz/corpus/<target>/). A crashing input is saved as
# build/fuzz/crashes/<target>/crash-<sha1> (or leak-, timeout-, oom-): minimise it with
#   build/fuzz/fuzz/<target>_fuzz -minimize_crash=1 -runs=10000 <file>
# and add it to fuzz/corpus/<target>/ with the fix, so the unit tier replays it from then on.
# Time: the first clang build took 24 minutes at JOBS=1 NICE=19 on a shared 2-core machine
# (ccache: a minute or two after a change); the runs take --seconds per target (15 targets:
# about 6 minutes at the default).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=20
targets=()
list=0
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --list) list=1; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done

all=()
for source in fuzz/*_fuzz.cc; do
  name=$(basename "$source" _fuzz.cc)
  all+=("$name")
done
if [ "$list" = 1 ]; then printf '%s\n' "${all[@]}"; exit 0; fi
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [ -f "fuzz/${t}_fuzz.cc" ] || { echo "fuzz: no target '$t' (scripts/fuzz.sh --list)" >&2; exit 2; }
done

build=build/fuzz
run_nice=(nice -n "${NICE:-0}")
"${run_nice[@]}" cmake --preset fuzz >/dev/null
"${run_nice[@]}" cmake --build --preset fuzz -j "${JOBS:-$(nproc)}" \
  --target "${targets[@]/%/_fuzz}"

# Extra seed directories per target (read, never written).
declare -A seeds=([vsphere_soap]=tests/vsphere/recorded)

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1:suppressions=$PWD/tests/ubsan.supp}
failed=()
printf '%-18s %8s %10s %8s %s\n' target seconds execs corpus result
for t in "${targets[@]}"; do
  work=$build/corpus/$t
  crashes=$build/crashes/$t
  log=$build/logs/$t.log
  mkdir -p "$work" "$crashes" "$(dirname "$log")"
  status=0
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: 2 GiB is a leak or a bomb.
  "${run_nice[@]}" "$build/fuzz/${t}_fuzz" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/" \
    "$work" "fuzz/corpus/$t" ${seeds[$t]:+"${seeds[$t]}"} >"$log" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  size=$(find "$work" -type f | wc -l)
  if [ "$status" -eq 0 ]; then
    result=ok
  else
    result="FAILED (exit $status; $log; $(ls "$crashes" | tr '\n' ' '))"
    failed+=("$t")
  fi
  printf '%-18s %8s %10s %8s %s\n' "$t" "$seconds" "${execs:-?}" "$size" "$result"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${failed[*]} failed; the inputs are in $build/crashes/" >&2
  exit 1
fi
