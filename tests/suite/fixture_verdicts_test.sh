#!/usr/bin/env bash
# Proves that CTest reports a broken fixture as FAILED and a skip as SKIPPED, through the very
# properties every banlieue_cc_test() gets (tests/support/gtest_main.cc, cmake/BanlieueTargets):
#   fixture_verdicts_test.sh <build dir>
# 1. the probe binary (fixture_probe_test.cc), its environment broken three ways, and a hang
#    (hang_probe_test.cc) ended at its time limit; every test of the build has one;
# 2. a real suite, vsphere_integration_test, whose vcsim cannot start (no openssl on PATH for
#    its certificates): before this check existed such a run was 12 skips and exit 0.
# Each ctest runs in the test's own build subdirectory, so its Testing/ log is not the outer
# run's.
set -uo pipefail
build=$1
fail=0
ctest=$(command -v ctest)  # by path: one check runs with PATH=/nonexistent

# verdict <subdir> <test regex> <expected ctest line regex> <expected output text> [env...]
verdict() {
  local dir=$1 regex=$2 want=$3 text=$4; shift 4
  local out
  out=$(env "$@" "$ctest" --test-dir "$build/$dir" -R "$regex" --verbose 2>&1)
  if ! grep -Eq "$want" <<<"$out" || [[ "$out" != *"$text"* ]]; then
    echo "FAIL $* ctest -R '$regex': want /$want/ and '$text' in:"
    sed 's/^/    /' <<<"$out"
    fail=1
  else
    echo "ok   $* ctest -R '$regex': $(grep -E "$want" <<<"$out" | head -n1 | sed 's/  */ /g')"
  fi
}

probe='^(FixtureProbe|SkipProbe)\.'
verdict tests/suite "$probe" '100% tests passed, 0 tests failed out of 2' '' \
  BANLIEUE_PROBE_MODE=
verdict tests/suite '^FixtureProbe\.' '\*\*\*Failed' 'the backend did not start' \
  BANLIEUE_PROBE_MODE=fail
verdict tests/suite '^FixtureProbe\.' '\*\*\*Failed' 'the CRD did not install' \
  BANLIEUE_PROBE_MODE=throw
verdict tests/suite '^SkipProbe\.' 'Skipped' 'probe: asked to skip' BANLIEUE_PROBE_MODE=skip
# A skip is not a pass: ctest lists it among the tests not run.
verdict tests/suite '^SkipProbe\.' 'The following tests did not run' '' BANLIEUE_PROBE_MODE=skip

# A hang is ended at the test's time limit and reported failed, never waited for.
verdict tests/suite '^HangProbe\.' '\*\*\*Timeout' '' BANLIEUE_PROBE_MODE=hang
# ... and every test of the build has a time limit (CTest's default is none: one hanging case
# once held a CI run until CI's own limit killed it, with no name for the culprit).
untimed=$("$ctest" --test-dir "$build" --show-only=json-v1 | python3 -c '
import json, sys
for test in json.load(sys.stdin)["tests"]:
    names = {p["name"] for p in test.get("properties", [])}
    if "TIMEOUT" not in names:
        print(test["name"])')
if [ -n "$untimed" ]; then
  echo "FAIL tests without a TIMEOUT:"
  sed 's/^/    /' <<<"$untimed"
  fail=1
else
  echo "ok   every test of $build has a TIMEOUT"
fi

# The real suite: its SetUpTestSuite makes certificates with openssl before starting vcsim.
first=$(ctest --test-dir "$build/tests/vsphere" -N -R '^VsphereTest\.' | sed -n 's/.*Test *#[0-9]*: //p' | head -n1)
if [ -z "$first" ]; then
  echo "FAIL no VsphereTest.* test registered under $build/tests/vsphere"
  fail=1
else
  verdict tests/vsphere "^${first//./\\.}\$" '\*\*\*Failed' 'openssl' PATH=/nonexistent
fi
exit $fail
