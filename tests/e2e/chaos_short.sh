#!/usr/bin/env bash
# The short seeded chaos run (issue #26) as a CTest test of the e2e tier (labels e2e;chaos):
# scripts/chaos.sh --fresh on a cluster of its own (state under the build tree, not the
# local_cluster fixture's), with the real libvirtd and the vcsim that `scripts/dev.sh up --real`
# starts, using the binaries of the build directory as they are.
#
#   tests/e2e/chaos_short.sh <build dir> <cycles> <seed> <time limit in seconds>
#
# It fails unless the report is one JSON document in which every cycle ran and converged,
# leaked = duplicated = stuck = 0, no stale workload and no anomaly but a kill that found no
# running container, both backends are reported, and at least one fault was injected; it prints
# the seed's plan (chaos.sh --plan) beside what the run did. Whatever happens, it stops the
# cluster, libvirtd and vcsim (scripts/dev.sh down, also after the time limit) and then fails if
# a process still names the state directory (QEMU, vcsim, libvirtd, the node's) or the node's
# network namespace is still there; such processes are killed by pid.
# Root only (the node, libvirtd): as another user it exits 77, CTest's skip.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 4 ] || { echo "usage: $0 <build dir> <cycles> <seed> <time limit seconds>" >&2; exit 2; }
build=$(cd "$1" && pwd) cycles=$2 seed=$3 limit=$4
if [ "$(id -u)" -ne 0 ]; then
  echo "chaos_short: needs root (the node's network namespace, libvirtd, QEMU); skipped"
  exit 77
fi

state=$build/chaos-cluster
report=$build/chaos-short-report.json
log=$build/chaos-short.log
export BANLIEUE_LOCAL_STATE=$state BANLIEUE_BUILD_DIR=$build
started=$SECONDS
say() { printf '[chaos_short %4ss] %s\n' "$((SECONDS - started))" "$*"; }

netns=""
cleanup() {
  local rc=$? pids pid left=0
  trap - EXIT
  say "stopping the cluster, libvirtd and vcsim (scripts/dev.sh down)"
  [ -n "$netns" ] || netns=$(sed -n 's/^NODE_NETNS=//p' "$state/run/node.env" 2>/dev/null || true)
  scripts/dev.sh down >>"$log" 2>&1 || { say "scripts/dev.sh down failed (see $log)"; left=1; }
  # What must be gone now: every process that names the state directory (QEMU's disks, vcsim's
  # certificates, libvirtd's configuration, the node's and the control plane's), and the netns.
  pids=$(pgrep -f -- "$state/" || true)
  for pid in $pids; do
    say "left behind: pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)"
    kill -KILL "$pid" 2>/dev/null || true
    left=1
  done
  if [ -n "$netns" ] && ip netns list | grep -qw -- "$netns"; then
    say "left behind: network namespace $netns"
    ip netns delete "$netns" 2>/dev/null || true
    left=1
  fi
  if [ -d "$state" ]; then
    say "left behind: $state"
    left=1
  fi
  [ "$left" -eq 0 ] || { say "FAIL: the clean-up left something behind"; [ "$rc" -ne 0 ] || rc=1; }
  say "exit $rc"
  exit "$rc"
}
trap cleanup EXIT

plan=$(scripts/chaos.sh --plan --cycles "$cycles" --seed "$seed")
say "the plan of seed $seed:"
printf '%s\n' "$plan" | sed 's/^/  /'
rm -f "$report"
: >"$log"
say "scripts/chaos.sh --fresh --cycles $cycles --seed $seed (progress: $log; at most $limit s)"
run_rc=0
timeout --kill-after=30 "$limit" scripts/chaos.sh --fresh --cycles "$cycles" --seed "$seed" \
  >"$report" 2>>"$log" || run_rc=$?
netns=$(sed -n 's/^NODE_NETNS=//p' "$state/run/node.env" 2>/dev/null || true)
say "chaos.sh exited $run_rc after $((SECONDS - started)) s; its last lines:"
tail -n 25 "$log" | sed 's/^/  /'
[ "$run_rc" -ne 124 ] || { say "FAIL: the time limit ($limit s) ran out"; exit 1; }
[ "$run_rc" -eq 0 ] || { say "FAIL: chaos.sh failed"; exit 1; }

say "report:"
jq . "$report" || { say "FAIL: the report is not JSON"; exit 1; }
[ "$(jq -s length "$report")" -eq 1 ] || { say "FAIL: the report is not one JSON document"; exit 1; }
verdict=$(jq -r --argjson cycles "$cycles" '
  [ (if .cycles != $cycles or .cycles_run != $cycles then "ran \(.cycles_run) of \($cycles) cycles" else empty end),
    (if ((.operations // {}) | add // 0) != $cycles then "operations do not add up to the cycles" else empty end),
    (if .stopped_after_timeout_in_cycle != null or (.timeouts | length) > 0
      then "an operation did not converge: \(.timeouts)" else empty end),
    (if .leaked_backend_vms != 0 then "leaked: \(.leaked)" else empty end),
    (if .duplicated_backend_vms != 0 then "duplicated: \(.duplicated)" else empty end),
    (if .stuck_objects != 0 then "stuck: \(.stuck)" else empty end),
    (if .stale_workloads != 0 then "stale workloads: \(.stale_workload_objects)" else empty end),
    (if (.backends | has("libvirt") and has("vsphere")) | not then "a backend is missing from the report" else empty end),
    (.anomalies[] | select(.what != "no running container to kill for 30 s") | "anomaly: \(.)"),
    (if ((.kills | add) + .apiserver_restarts + .apiserver_pauses) == 0 then "no fault was injected" else empty end)
  ] | .[]' "$report") || { say "FAIL: the report lacks the keys it should have"; exit 1; }
say "done: $(jq -c '{kills, provider_kills, apiserver_restarts, apiserver_pauses, operations_by_backend,
  max_converge_seconds, run_seconds}' "$report")"
if [ -n "$verdict" ]; then
  printf '%s\n' "$verdict" | sed 's/^/  FAIL: /'
  exit 1
fi
say "PASS: $cycles cycles, 0 leaked, 0 duplicated, 0 stuck"
