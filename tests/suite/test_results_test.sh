#!/usr/bin/env bash
# scripts/test_results.py, the verdict of scripts/test.sh, on real CTest JUnit reports of the
# probe (fixture_probe_test.cc): a skip not on the allow-list fails the run, a listed one passes
# with its reason shown, a failure fails, a tier under its minimum or without a report fails.
#   test_results_test.sh <source dir> <build dir>
set -uo pipefail
src=$1
build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

report() {  # report <name> <test regex> <probe mode>: a JUnit report of one ctest run
  BANLIEUE_PROBE_MODE=$3 ctest --test-dir "$build/tests/suite" -R "$2" \
    --output-junit "$work/$1.xml" >/dev/null 2>&1
}
# expect <exit code> <text> <allow-list text> <tier specs...>
expect() {
  local want=$1 text=$2 allow=$3; shift 3
  printf '%s\n' "$allow" >"$work/allow.txt"
  local out got
  out=$(python3 "$src/scripts/test_results.py" --allowlist "$work/allow.txt" "$@" 2>&1)
  got=$?
  if [ "$got" -ne "$want" ] || [[ "$out" != *"$text"* ]]; then
    echo "FAIL $*: exit $got (want $want), want '$text' in:"
    sed 's/^/    /' <<<"$out"
    fail=1
  else
    echo "ok   exit $got, '$text'"
  fi
}

report passed '^(FixtureProbe|SkipProbe)\.' ''
report skipped '^SkipProbe\.' skip
report broken '^FixtureProbe\.' fail

expect 0 "unit         2 passed, 0 failed, 0 skipped" '' "unit=$work/passed.xml:2"
expect 1 "not in $work/allow.txt: a skip is a failure" '# nothing allowed' "unit=$work/skipped.xml:1"
expect 0 "(allowed: the probe was asked to)" 'SkipProbe\.SkipsOnlyWhenAsked the probe was asked to' \
  "unit=$work/skipped.xml:1"
expect 1 "failed:  FixtureProbe.RunsOnlyAfterItsFixtureStarted" '' "unit=$work/broken.xml:1"
expect 1 "ran 2 tests, fewer than its minimum 3" '' "unit=$work/passed.xml:3"
expect 1 "e2e          did not run" '' "unit=$work/passed.xml:2" "e2e=$work/missing.xml:1"
expect 1 "needs a reason" 'SkipProbe\..*' "unit=$work/passed.xml:2"
exit $fail
