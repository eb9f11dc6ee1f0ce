#!/usr/bin/env bash
# deploy/local's process bookkeeping (lib.sh: start, pid_of, exit_reason), as `up` uses it:
# a component that has not exec'd yet is running, not "exited"; one that exits is reported with
# its exit status and its log, or says its log is empty; a pid file whose process was replaced
# is not ours. (A newcomer's first scripts/dev.sh once stopped with "the node agent exited:"
# and nothing after it while the agent was starting normally.)
#   local_up_start_test.sh <source dir>
set -uo pipefail
# shellcheck source=../../deploy/local/lib.sh
. "$1/deploy/local/lib.sh"
STATE=$(mktemp -d)
mkdir -p "$STATE/logs" "$STATE/run"
trap 'kill "$(pid_of slow)" 2>/dev/null; rm -rf "$STATE"' EXIT
fail=0
check() {  # check <description> <command...>
  local what=$1; shift
  if "$@" >/dev/null; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}
gone_within_10s() { for _ in $(seq 1 100); do pid_of "$1" >/dev/null || return 0; sleep 0.1; done; return 1; }

# Its command line names nothing of STATE until it execs (as bash's own, between fork and exec).
start slow sh -c 'sleep 2; exec sleep 30'
check "a component that has not exec'd yet runs" pid_of slow

start failing sh -c 'echo "cannot bind 127.0.0.1:1: permission denied"; exit 3'
check "a component that exits is seen gone" gone_within_10s failing
exit_reason failing
check "its reason gives the exit status: $EXIT_REASON" grep -q 'exited with status 3' <<<"$EXIT_REASON"
check "its reason quotes its log" grep -q 'cannot bind 127.0.0.1:1' <<<"$EXIT_REASON"

start silent sh -c 'exit 4'
check "a silent component is seen gone" gone_within_10s silent
exit_reason silent
check "its reason says the log is empty: $EXIT_REASON" grep -q 'status 4; .*silent.log is empty' <<<"$EXIT_REASON"

start killed sleep 30
kill -KILL "$(pid_of killed)"
check "a killed component is seen gone" gone_within_10s killed
exit_reason killed
check "its reason names the signal: $EXIT_REASON" grep -q 'status 137 (signal 9)' <<<"$EXIT_REASON"

# A pid file whose pid now belongs to another process (here: this shell) is not ours.
echo "$$ 1" >"$STATE/run/reused.pid"
if pid_of reused >/dev/null; then echo "FAIL a reused pid is taken for ours"; fail=1; fi
exit $fail
