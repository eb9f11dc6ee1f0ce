#!/usr/bin/env bash
# The end-to-end benchmark (issue #10; bench/README.md explains every figure). Builds the
# release preset, starts a private local control plane (deploy/local/up --state-dir <own dir>),
# installs the CRDs, runs `banlieue controller` and one `banlieue provider file` (the example
# plugin, which answers at once) as plain processes, applies a VMClass, VMImage, ProviderClass
# and Provider, then converges N VirtualMachines, watches 60 s of steady state, runs the
# minimal client against the same apiserver, and stops everything it started (also on failure
# or Ctrl-C). One JSON document on stdout; progress on stderr.
#
#   scripts/bench.sh [--vms N] [--threads T] [--kube-qps Q] [--no-limit] [--keep]
#     --vms N        VirtualMachines to converge (default 100)
#     --threads T    client threads creating VMs, and the minimal client's threads (default 16)
#     --kube-qps Q   passed to both roles (default: the roles' own default, 50, burst 100;
#                    with Q, burst 1.5 x Q)
#     --no-limit     skip the minimal client (no limit_seconds or ratio): for RSS at large N
#     --keep         leave the control plane and its state directory up afterwards
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }

vms=100 threads=16 qps="" keep=0 limit=1
while [ $# -gt 0 ]; do
  case "$1" in
    --vms) vms=${2:?--vms needs a number}; shift 2 ;;
    --threads) threads=${2:?--threads needs a number}; shift 2 ;;
    --kube-qps) qps=${2:?--kube-qps needs a number}; shift 2 ;;
    --no-limit) limit=0; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "scripts/bench.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
[[ $vms =~ ^[1-9][0-9]*$ ]] || { echo "scripts/bench.sh: --vms must be a positive integer" >&2; exit 2; }
[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "scripts/bench.sh: --threads must be a positive integer" >&2; exit 2; }
[ -z "$qps" ] || [[ $qps =~ ^[0-9]+([.][0-9]+)?$ ]] ||
  { echo "scripts/bench.sh: --kube-qps must be a number" >&2; exit 2; }

started=$SECONDS
say() { printf '[bench %4ss] %s\n' "$((SECONDS - started))" "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

build=$root/build/release
bin=$build/host/banlieue
plugin_dir=$build/plugins-dir

say "building the release preset (banlieue, the file plugin, converge_bench, abi_call_bench)"
deploy/local/build >&2
cmake --preset release >/dev/null
cmake --build --preset release -j2 --target banlieue banlieue-provider-file converge_bench \
  abi_call_bench >&2
[ -x "$bin" ] || fail "$bin was not built"
[ -f "$plugin_dir/file/provider.json" ] || fail "the file plugin is not in $plugin_dir/file"

state=$(mktemp -d /tmp/banlieue-bench.XXXXXX)
kubeconfig=$state/kubeconfig
logs=$state/bench-logs
mkdir -p "$logs" "$state/file-backend"
role_pids=()

# Stops the roles by pid (SIGTERM, then SIGKILL after 10 s), then the control plane.
stop_roles() {
  local pid
  for pid in "${role_pids[@]+"${role_pids[@]}"}"; do
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  role_pids=()
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_roles
  if [ "$keep" -eq 1 ]; then
    say "kept: KUBECONFIG=$kubeconfig; stop with deploy/local/down --purge --state-dir $state"
  else
    deploy/local/down --purge --state-dir "$state" >/dev/null 2>&1 || true
  fi
  [ "$rc" -eq 0 ] || say "logs were in $logs (removed unless --keep)"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "starting a private control plane in $state"
deploy/local/up --state-dir "$state" >&2
k() { kubectl --kubeconfig "$kubeconfig" "$@"; }

say "installing the CRDs (deploy/crds and the file plugin's)"
k apply --server-side --field-manager=banlieue-bench -f deploy/crds \
  -f "$plugin_dir/file/crds/filemachines.yaml" >/dev/null
k wait --for=condition=Established --timeout=60s crd --all >/dev/null

# What `banlieue bootstrap operator` and the operator would have done: the namespace, the
# ProviderClass and its published machineKind (the operator reads it from provider.json).
k create namespace bench >/dev/null
k create namespace bench-limit >/dev/null
k apply -f - >/dev/null <<YAML
apiVersion: banlieue.io/v1alpha1
kind: ProviderClass
metadata: {name: file}
spec:
  backend: file
  deployment: External
  plugin: {path: file}
---
apiVersion: banlieue.io/v1alpha1
kind: Provider
metadata: {name: files, namespace: bench}
spec:
  providerClassRef: {name: file}
  connection: {endpoint: "file://$state/file-backend"}
  capabilities:
    storageClasses: [{name: local}]
    networkClasses: [{name: lan}]
---
apiVersion: banlieue.io/v1alpha1
kind: VMClass
metadata: {name: bench}
spec:
  hardware:
    cpus: 1
    memoryMiB: 128
    disks: [{name: root, sizeGiB: 1, storageClass: local}]
  network:
    interfaces: [{name: eth0, networkClass: lan}]
---
apiVersion: banlieue.io/v1alpha1
kind: VMImage
metadata: {name: bench}
spec:
  sources: [{providerClass: file, kind: BackingFile, ref: base.img}]
YAML
k patch providerclass file --subresource=status --type=merge -p \
  '{"status":{"machineKind":{"apiVersion":"infrastructure.file.example.com/v1alpha1","kind":"FileMachine"}}}' \
  >/dev/null

free_port() {
  local port
  for _ in $(seq 1 200); do
    port=$((20000 + RANDOM % 40000))
    [ -z "$(ss -Htan "sport = :$port" 2>/dev/null)" ] && { echo "$port"; return 0; }
  done
  fail "no free loopback port"
}
qps_flags=()
if [ -n "$qps" ]; then
  qps_flags=(--kube-qps "$qps" --kube-burst "$(awk -v q="$qps" 'BEGIN { printf "%d", q * 1.5 + 1 }')")
fi

# start_role <name> <health-port> <metrics-port> <args...>: starts it, waits for /readyz and
# sets role_pid and startup_ms (milliseconds from exec to the first ready answer). Not run in
# a subshell, so the pid is in role_pids before anything can fail.
start_role() {
  local name=$1 health=$2 metrics=$3 t0 pid
  shift 3
  t0=$(now_ms)
  "$bin" --log-level info "$@" --kubeconfig "$kubeconfig" --bind-address 127.0.0.1 \
    --health-port "$health" --metrics-port "$metrics" "${qps_flags[@]+"${qps_flags[@]}"}" \
    >"$logs/$name.log" 2>&1 </dev/null &
  pid=$!
  role_pids+=("$pid")
  role_pid=$pid
  for _ in $(seq 1 6000); do
    kill -0 "$pid" 2>/dev/null || fail "$name exited: $(tail -n 5 "$logs/$name.log")"
    if curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$health/readyz"; then
      startup_ms=$(($(now_ms) - t0))
      return 0
    fi
    sleep 0.01
  done
  fail "$name was not ready within 60 s: $(tail -n 5 "$logs/$name.log")"
}

provider_health=$(free_port) provider_metrics=$(free_port)
say "starting banlieue provider file (Provider bench/files)"
start_role provider "$provider_health" "$provider_metrics" provider file \
  --provider bench/files --plugin-dir "$plugin_dir" --leader-election-namespace bench
provider_pid=$role_pid provider_startup_ms=$startup_ms

controller_health=$(free_port) controller_metrics=$(free_port)
say "starting banlieue controller (no leader election: one replica)"
start_role controller "$controller_health" "$controller_metrics" controller --no-leader-elect
controller_pid=$role_pid controller_startup_ms=$startup_ms

say "waiting for the Provider to be Ready and the image ready on it"
k wait --for=condition=Ready --timeout=120s -n bench provider/files >/dev/null ||
  fail "Provider bench/files is not Ready: $(k get provider files -n bench -o yaml)"
for _ in $(seq 1 1200); do
  ready=$(k get vmimage bench -o jsonpath='{.status.perProvider[?(@.providerName=="files")].ready}')
  [ "$ready" = true ] && break
  sleep 0.1
done
[ "$ready" = true ] || fail "VMImage bench is not ready on files: $(k get vmimage bench -o yaml)"

# Metrics: banlieue_kube_write_requests_total and banlieue_reconcile_total of one role.
scrape() { curl -sf --max-time 10 "http://127.0.0.1:$1/metrics" >"$2" || fail "cannot scrape :$1"; }
# "<resource>[/<subresource>] <count>" for every write series of a scrape.
writes_of() {
  awk '/^banlieue_kube_write_requests_total\{/ {
         res = $0; sub(/.*[{,]resource="/, "", res); sub(/".*/, "", res)
         sr = $0; sub(/.*[{,]subresource="/, "", sr); sub(/".*/, "", sr)
         if (sr != "") res = res "/" sr
         n[res] += $NF
       }
       END { for (r in n) print r, n[r] }' "$1"
}
# "<VERB> <count>" for every request series (reads included), and requests the client-side
# QPS limit delayed.
requests_of() {
  awk '/^banlieue_kube_requests_total\{/ {
         v = $0; sub(/.*[{,]verb="/, "", v); sub(/".*/, "", v); n[v] += $NF
       }
       /^banlieue_kube_client_throttled_total / { n["throttled"] += $NF }
       END { for (v in n) print v, n[v] }' "$1"
}
reconciles_of() { awk '/^banlieue_reconcile_total\{/ { n += $NF } END { print n + 0 }' "$1"; }
# delta <before> <after> [extractor]: "<key> <after - before>" for each key that changed.
delta() {
  local of=${3:-writes_of}
  awk 'NR == FNR { b[$1] = $2; next } { d = $2 - b[$1]; if (d != 0) print $1, d }' \
    <("$of" "$1") <("$of" "$2") | sort
}
total() { awk '{ n += $2 } END { print n + 0 }'; }
# Lease renewals are leader election's heartbeat, not reconcile output: counted apart.
not_leases() { grep -v '^leases ' || true; }
per_vm_json() {  # "<key> <count>" lines -> {"key":count/vms,...}
  awk -v n="$vms" 'BEGIN { printf "{" } NF == 2 { printf "%s\"%s\":%.3f", (k++ ? "," : ""), $1, $2 / n }
                   END { printf "}" }'
}
counts_json() {
  awk 'BEGIN { printf "{" } NF == 2 { printf "%s\"%s\":%d", (k++ ? "," : ""), $1, $2 } END { printf "}" }'
}

scrape "$controller_metrics" "$logs/controller.0"
scrape "$provider_metrics" "$logs/provider.0"

say "converging $vms VirtualMachines ($threads client threads)"
converge_json=$("$build/bench/converge_bench" converge "$kubeconfig" bench "$vms" "$threads" \
  $((120 + vms))) || fail "the VMs did not converge (logs: $logs)"
say "converged: $converge_json"
scrape "$controller_metrics" "$logs/controller.1"
scrape "$provider_metrics" "$logs/provider.1"

say "steady state: counting writes for 60 s"
sleep 60
scrape "$controller_metrics" "$logs/controller.2"
scrape "$provider_metrics" "$logs/provider.2"

hwm_mb() { awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
controller_rss_mb=$(hwm_mb "$controller_pid")
provider_rss_mb=$(hwm_mb "$provider_pid")
stop_roles

limit_json=""
if [ "$limit" -eq 1 ]; then
  say "the minimal client: the same $vms VMs' unavoidable writes, $threads threads"
  limit_json=$("$build/bench/converge_bench" limit "$kubeconfig" bench vm-0 bench-limit "$vms" \
    "$threads") || fail "the minimal client failed"
  say "minimal client: $limit_json"
fi

say "ABI call overhead (abi_call_bench)"
abi_json=$("$build/bench/abi_call_bench" --benchmark_format=json --benchmark_min_time=0.5 \
  --benchmark_filter='^BM_ReconcileRoundTrip4KiB$' 2>/dev/null)
abi_call_us=$(awk -F: '/"real_time"/ { v = $2 } /"time_unit"/ { u = $2 }
  END { gsub(/[ ,"]/, "", v); gsub(/[ ,"]/, "", u)
        f = (u == "ns") ? 1e-3 : (u == "us") ? 1 : (u == "ms") ? 1e3 : 1e6
        printf "%.2f", v * f }' <<<"$abi_json")

field() { sed -n "s/.*\"$2\":\\([0-9.]*\\).*/\\1/p" <<<"$1"; }
converge_seconds=$(field "$converge_json" converge_seconds)
create_seconds=$(field "$converge_json" create_seconds)
limit_seconds=$(field "$limit_json" limit_seconds)
ratio=null
if [ -n "$limit_seconds" ]; then
  ratio=$(awk -v a="$converge_seconds" -v b="$limit_seconds" 'BEGIN { printf "%.2f", a / b }')
else
  limit_seconds=null
fi

c_create=$(delta "$logs/controller.0" "$logs/controller.1")
p_create=$(delta "$logs/provider.0" "$logs/provider.1")
c_steady=$(delta "$logs/controller.1" "$logs/controller.2")
p_steady=$(delta "$logs/provider.1" "$logs/provider.2")
steady_all=$(printf '%s\n%s\n' "$c_steady" "$p_steady" | sed '/^$/d')
c_total=$(total <<<"$c_create")
p_total=$(total <<<"$p_create")
c_rec=$(($(reconciles_of "$logs/controller.1") - $(reconciles_of "$logs/controller.0")))
p_rec=$(($(reconciles_of "$logs/provider.1") - $(reconciles_of "$logs/provider.0")))

cat <<JSON
{
  "vms": $vms,
  "converge_seconds": $converge_seconds,
  "limit_seconds": $limit_seconds,
  "ratio_to_limit": $ratio,
  "create_seconds": $create_seconds,
  "limit_writes_per_vm": {"user": 1, "unavoidable": 6},
  "api_writes_per_vm": {"controller": $(awk -v a="$c_total" -v n="$vms" 'BEGIN { printf "%.3f", a / n }'), "provider": $(awk -v a="$p_total" -v n="$vms" 'BEGIN { printf "%.3f", a / n }'), "all": $(awk -v a="$c_total" -v b="$p_total" -v n="$vms" 'BEGIN { printf "%.3f", (a + b) / n }')},
  "api_writes_per_vm_by_resource": {"controller": $(per_vm_json <<<"$c_create"), "provider": $(per_vm_json <<<"$p_create")},
  "api_requests_per_vm_by_verb": {"controller": $(delta "$logs/controller.0" "$logs/controller.1" requests_of | per_vm_json), "provider": $(delta "$logs/provider.0" "$logs/provider.1" requests_of | per_vm_json)},
  "reconciles_per_vm": {"controller": $(awk -v a="$c_rec" -v n="$vms" 'BEGIN { printf "%.3f", a / n }'), "provider": $(awk -v a="$p_rec" -v n="$vms" 'BEGIN { printf "%.3f", a / n }')},
  "steady_state_writes_60s": $(not_leases <<<"$steady_all" | total),
  "steady_state_lease_renewals_60s": $(grep '^leases ' <<<"$steady_all" | total),
  "steady_state_writes_by_resource": {"controller": $(counts_json <<<"$c_steady"), "provider": $(counts_json <<<"$p_steady")},
  "controller_rss_mb": $controller_rss_mb,
  "provider_rss_mb": $provider_rss_mb,
  "startup_ms": {"controller": $controller_startup_ms, "provider": $provider_startup_ms},
  "abi_call_us": $abi_call_us,
  "settings": {"client_threads": $threads, "kube_qps": "${qps:-role default}", "plugin": "file (examples/file-provider)"},
  "machine": {"nproc": $(nproc), "mem_mb": $(awk '/^MemTotal:/ { printf "%d", $2 / 1024 }' /proc/meminfo), "loadavg_at_end": "$(cut -d' ' -f1-3 /proc/loadavg)"}
}
JSON
say "done in $((SECONDS - started)) s"
