#!/usr/bin/env bash
# Runs a command and passes only when its exit status AND its output are the expected ones.
# CTest's PASS_REGULAR_EXPRESSION ignores the exit status, so a sanitizer report after the
# expected line (LeakSanitizer at exit, say) still passed; this wrapper checks all three.
#
#   expect_output.sh [--exit N|nonzero] [--forbid REGEX] EXPECTED_REGEX -- COMMAND [ARGS...]
#
#   --exit N        the exit status the command must return (default 0); `nonzero` accepts
#                   any status from 1 to 255 (a sanitizer's exitcode or abort)
#   --forbid REGEX  output that fails the test (default: any sanitizer report)
#   EXPECTED_REGEX  an extended regular expression the output (stdout and stderr) must match
set -uo pipefail

usage() {
  echo "usage: $0 [--exit N|nonzero] [--forbid REGEX] EXPECTED_REGEX -- COMMAND [ARGS...]" >&2
  exit 2
}

expected_exit=0
forbid='LeakSanitizer|AddressSanitizer|runtime error'
while [ $# -gt 0 ]; do
  case "$1" in
    --exit) [ $# -ge 2 ] || usage; expected_exit=$2; shift 2 ;;
    --forbid) [ $# -ge 2 ] || usage; forbid=$2; shift 2 ;;
    --) usage ;;
    *) break ;;
  esac
done
[ $# -ge 3 ] || usage
pattern=$1
shift
[ "$1" = "--" ] || usage
shift

output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"

failed=0
if [ "$expected_exit" = "nonzero" ]; then
  if [ "$status" -eq 0 ]; then
    echo "expect_output: FAIL: exit status 0, expected a failure" >&2
    failed=1
  fi
elif [ "$status" -ne "$expected_exit" ]; then
  echo "expect_output: FAIL: exit status $status, expected $expected_exit" >&2
  failed=1
fi
if ! grep -Eq -- "$pattern" <<<"$output"; then
  echo "expect_output: FAIL: no output matches /$pattern/" >&2
  failed=1
fi
if [ -n "$forbid" ] && grep -Eq -- "$forbid" <<<"$output"; then
  echo "expect_output: FAIL: output matches the forbidden /$forbid/:" >&2
  grep -E -- "$forbid" <<<"$output" | head -5 >&2
  failed=1
fi
[ "$failed" -eq 0 ] && echo "expect_output: ok (exit $status, /$pattern/ found)"
exit "$failed"
