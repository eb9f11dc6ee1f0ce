#!/usr/bin/env bash
# The chaos run (issue #26): banlieue on the local cluster with backends whose state lives
# outside the provider pods (what `scripts/dev.sh up --real` starts: a real libvirtd and the
# project's vcsim), N seeded cycles of VM operations with faults, then a comparison of each
# backend's own inventory (libvirtd's domains, vcsim's VMs) with the API objects.
#
#   scripts/chaos.sh [--cycles N] [--seed S] [--timeout SECONDS] [--fresh] [--down] [--plan]
#
#   --cycles N        cycles to run (default 5)
#   --seed S          seed of the PRNG that picks every operation, VM, Provider, fault and fault
#                     time (default 1); the same seed gives the same sequence of operations and
#                     faults (timings, and so what a fault interrupts, still vary from run to run)
#   --timeout SECONDS how long one operation may take to reach its expected state (default 240)
#   --fresh           start from a new cluster (scripts/dev.sh down first): an earlier run's
#                     faults may have left something behind that this run would count
#   --down            stop the cluster, libvirtd and vcsim afterwards (scripts/dev.sh down)
#   --plan            only print the seed's cycles (operation, VM, Provider, fault) as JSON, one
#                     line each, then a summary line; needs no cluster and no root
#
# Three Providers: libvirt-host1 (env=prod) and libvirt-host2 (env=staging) on the libvirtd,
# vsphere-vc1 (env=lab) on vcsim. A cycle picks one operation: create a VM on a drawn Provider,
# resize it (hardwareOverride), power it off or on, swap it to one of the two other Providers
# (libvirt to libvirt, libvirt to vSphere, vSphere to libvirt), delete it, or (rarely) delete a
# Provider that has VMs and recreate it (ADR 0024: its machines go, the Provider goes, nothing
# stays Terminating). At a random second of the operation it injects one fault: SIGKILL of the
# controller's, the operator's or the operation's Provider's pod's process (found through the
# node's containerd), SIGKILL of the kube-apiserver and a restart with its own command line (as
# deploy/local/up started it), or SIGSTOP of the apiserver for longer than the 15 s Lease, then
# SIGCONT. It then waits (bounded) until the operation's expected state holds; the first
# operation that does not converge ends the cycles (the report says in which cycle) and leaves
# every banlieue pod's log, as the kubelet held them then, in $STATE/chaos/pod-logs/cycle-N/.
# After the cycles it deletes every VM it created, waits (bounded), and compares `virsh list
# --all` and vcsim's VMs (listed by vcsim's own -inventory client) with the objects: a backend
# VM without its machine object (LibvirtMachine, VSphereMachine; by uid) is leaked, two backend
# VMs for one VM are duplicated, and a VM, machine or Provider still carrying a
# deletionTimestamp is stuck; a provider ReplicaSet whose Deployment is gone is a stale
# workload. ONE JSON document goes to stdout, with the figures per backend under `backends`;
# progress goes to stderr.
#
# Runs on its own cluster (BANLIEUE_LOCAL_STATE, default /tmp/banlieue-chaos), which it brings
# up with `scripts/dev.sh up --real` (fast when it is already up; BANLIEUE_BUILD_DIR passes a
# build directory to use as it is). It deletes the walkthrough VM dev.sh creates: the run owns
# that cluster. Needs root, as dev.sh does.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
usage() { sed -n '2,43p' "$0" | sed 's/^# \{0,1\}//'; }

cycles=5 seed=1 op_timeout=240 down=0 fresh=0 plan_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cycles) cycles=${2:?--cycles needs a number}; shift ;;
    --seed) seed=${2:?--seed needs a number}; shift ;;
    --timeout) op_timeout=${2:?--timeout needs seconds}; shift ;;
    --down) down=1 ;;
    --fresh) fresh=1 ;;
    --plan) plan_only=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "chaos.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[[ $cycles =~ ^[0-9]+$ && $seed =~ ^[0-9]+$ && $op_timeout =~ ^[0-9]+$ ]] ||
  { echo "chaos.sh: --cycles, --seed and --timeout take whole numbers" >&2; exit 2; }

export BANLIEUE_LOCAL_STATE=${BANLIEUE_LOCAL_STATE:-/tmp/banlieue-chaos}
if [ "$(id -u)" -ne 0 ] && [ "$plan_only" -eq 0 ]; then
  if command -v sudo >/dev/null; then
    exec sudo --preserve-env=BANLIEUE_LOCAL_STATE,BANLIEUE_BUILD_DIR,JOBS "$0" "$@"
  fi
  echo "chaos.sh: needs root (the node's containerd, the apiserver's process)" >&2
  exit 1
fi

STATE=$BANLIEUE_LOCAL_STATE
export KUBECONFIG=$STATE/kubeconfig
# deploy/local/lib.sh: pid_of, start, readyz - the same helpers deploy/local/up uses, so the
# apiserver is restarted exactly as up started it.
# shellcheck source=../deploy/local/lib.sh
. "$repo/deploy/local/lib.sh"
kubectl=/usr/lib/google-cloud-sdk/bin/kubectl.1.32
[ -x "$kubectl" ] || kubectl=kubectl
libvirt_uri="qemu:///system?socket=$STATE/dev/libvirt/sock/libvirt-sock"
vcsim_bin=${BANLIEUE_BUILD_DIR:-$repo/build/dev}/tests/vsphere/vcsim
vcsim_dir=$STATE/dev/vcsim  # dev.sh's: url, pki/cacert.pem, password
chaos_dir=$STATE/chaos
ns=default
providers=(libvirt-host1 libvirt-host2 vsphere-vc1)
declare -A provider_env=([libvirt-host1]=prod [libvirt-host2]=staging [vsphere-vc1]=lab)
declare -A provider_backend=([libvirt-host1]=libvirt [libvirt-host2]=libvirt [vsphere-vc1]=vsphere)
backends=(libvirt vsphere)
declare -A machine_kind=([libvirt]=libvirtmachine [vsphere]=vspheremachine)
max_vms=3

# shellcheck source=chaos/lib.sh
. "$repo/scripts/chaos/lib.sh"
# shellcheck source=chaos/faults.sh
. "$repo/scripts/chaos/faults.sh"
# shellcheck source=chaos/ops.sh
. "$repo/scripts/chaos/ops.sh"

# plan: the seed's cycles without a cluster: one JSON line per cycle, then one summary line
# (operations, operations per backend, faults; a provider kill names its Provider).
plan() {
  local cycle
  chaos_dir=$(mktemp -d)
  trap 'rm -rf "$chaos_dir"' EXIT
  RANDOM=$seed
  for ((cycle = 1; cycle <= cycles; cycle++)); do run_cycle "$cycle" 2>/dev/null; done
  cat "$chaos_dir/plan.jsonl"
  jq -sc --argjson seed "$seed" --argjson cycles "$cycles" '{seed: $seed, cycles: $cycles,
    operations: (group_by(.op) | map({(.[0].op): length}) | add // {}),
    faults: (map(if .fault == "kill-provider" then "kill-provider \(.provider)" else .fault end)
      | group_by(.) | map({(.[0]): length}) | add // {})}' "$chaos_dir/plan.jsonl"
}

main() {
  local started=$SECONDS cycle
  trap resume_apiserver EXIT  # never leave the apiserver stopped
  mkdir -p "$chaos_dir"
  : >"$chaos_dir/timeouts.jsonl"
  : >"$chaos_dir/anomalies.jsonl"
  if [ "$fresh" -eq 1 ]; then
    log "stopping the earlier cluster (scripts/dev.sh down)"
    scripts/dev.sh down >&2
    mkdir -p "$chaos_dir"
    : >"$chaos_dir/timeouts.jsonl"
    : >"$chaos_dir/anomalies.jsonl"
  fi
  log "bringing up the cluster (scripts/dev.sh up --real, state $STATE)"
  scripts/dev.sh up --real >"$chaos_dir/dev-up.log" 2>&1 ||
    fail "scripts/dev.sh up --real failed: see $chaos_dir/dev-up.log"
  prepare
  RANDOM=$seed
  cycles_run=0 stopped_at=""
  for ((cycle = 1; cycle <= cycles; cycle++)); do
    run_cycle "$cycle"
    cycles_run=$cycle
    # Past a timeout the next operations would only wait on the same broken state.
    if [ "$failed_waits" -gt 0 ]; then
      stopped_at=$cycle
      log "an operation did not converge: stopping the cycles, cleaning up, reporting"
      break
    fi
  done
  finish
  report "$((SECONDS - started))"
  if [ "$down" -eq 1 ]; then
    log "stopping the cluster (scripts/dev.sh down)"
    scripts/dev.sh down >&2
  fi
}

if [ "$plan_only" -eq 1 ]; then plan; else main; fi
