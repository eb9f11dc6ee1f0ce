#!/usr/bin/env bash
# expect_output.sh fails each way a test can go wrong: the wrong exit status with the expected
# output, the expected status without the output, and a sanitizer report after both.
set -uo pipefail
wrapper="$(dirname "$0")/expect_output.sh"
failures=0

check() {  # check <want: pass|fail> <description> <wrapper args...>
  local want=$1 what=$2
  shift 2
  "$wrapper" "$@" >/dev/null 2>&1
  local got=$?
  if { [ "$want" = pass ] && [ "$got" -eq 0 ]; } || { [ "$want" = fail ] && [ "$got" -eq 1 ]; }; then
    echo "ok   $what"
  else
    echo "FAIL $what: wrapper exited $got, wanted $want"
    failures=$((failures + 1))
  fi
}

check pass "expected output and exit 0" 'done' -- sh -c 'echo done'
check fail "expected output, exit 1" 'done' -- sh -c 'echo done; exit 1'
check fail "exit 0 without the output" 'done' -- sh -c 'echo nothing'
check fail "LeakSanitizer report after the output" 'done' -- \
  sh -c 'echo done; echo "ERROR: LeakSanitizer: detected memory leaks" >&2'
check fail "UBSan report" 'done' -- sh -c 'echo "x.cc:1:2: runtime error: overflow"; echo done'
check pass "expected failure with its report" --exit nonzero --forbid 'LeakSanitizer' \
  'heap-use-after-free' -- sh -c 'echo "ERROR: AddressSanitizer: heap-use-after-free" >&2; exit 1'
check fail "expected failure that exits 0" --exit nonzero --forbid '' 'heap-use-after-free' -- \
  sh -c 'echo "ERROR: AddressSanitizer: heap-use-after-free"'
check fail "expected failure without its report" --exit nonzero 'heap-use-after-free' -- \
  sh -c 'exit 1'
check pass "a chosen exit status" --exit 3 'three' -- sh -c 'echo three; exit 3'
check fail "another exit status" --exit 3 'three' -- sh -c 'echo three; exit 4'

if [ "$failures" -ne 0 ]; then
  echo "$failures case(s) failed"
  exit 1
fi
echo "expect_output.sh: every case answered as expected"
