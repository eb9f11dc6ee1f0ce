#!/usr/bin/env bash
# The end-to-end benchmark (issue #10; bench/README.md explains every figure). Builds the
# release preset, starts a private local cluster with a real node (deploy/local/up --node
# --state-dir <own dir>, the image localhost/banlieue:<version> built from the release build),
# installs the CRDs, runs `banlieue controller` and one `banlieue provider file` (the example
# plugin, which answers at once, from its provider image) as pods of one-replica Deployments
# with the RBAC `banlieue bootstrap operator` and the operator would give them, applies a
# VMClass, VMImage, ProviderClass and Provider, then converges N VirtualMachines, watches 60 s
# of steady state, runs the minimal client against the same apiserver, and stops everything it
# started, the node included (also on failure or Ctrl-C). One JSON document on stdout; progress
# on stderr. Needs root (the node), as deploy/local/up --node does; re-runs itself with sudo.
#
#   scripts/bench.sh [--vms N] [--threads T] [--kube-qps Q] [--no-limit] [--keep] [--processes]
#                    [--create-seconds S [--max-creates C]] [--limit-apply] [--baseline FILE]
#                    [--resync-seconds R [--no-watch]]
#     --vms N        VirtualMachines to converge (default 100)
#     --threads T    client threads creating VMs, and the minimal client's threads (default 16)
#     --kube-qps Q   passed to both roles (default: the roles' own default, no client-side
#                    limit, docs/adr/0048; with Q, burst 1.5 x Q)
#     --no-limit     skip the minimal client (no limit_seconds or ratio): for RSS at large N
#     --limit-apply  after the minimal client, the same client with the roles' server-side
#                    applies (limit_apply_seconds), then the minimal client again in a third
#                    namespace (limit_again_seconds: what the extra objects alone cost)
#     --create-seconds S  a slow backend: the file plugin takes S seconds per create (polled as
#                    an operation); reports backend_bound (N x S / C against converge_seconds)
#     --max-creates C     the Provider's spec.maxConcurrentCreates (default: unset, 16)
#     --baseline FILE  the JSON document of an earlier run at a smaller N (e.g. --vms 10000
#                    beside --vms 50000): adds marginal_kb_per_vm, each role's peak RSS growth
#                    per VM between the two
#     --resync-seconds R  the provider's --resync-seconds (default: its own, 600): with R < 60
#                    the steady-state minute holds resyncs, which the change feed (ADR 0057)
#                    answers without backend calls
#     --no-watch     the provider without its change feed (--watch-seconds 0): each resync
#                    calls the backend, as for a plugin that has no feed
#     --keep         leave the cluster, its node and its state directory up afterwards (and the
#                    roles' pods, when the run failed before stopping them)
#     --processes    run the roles as plain host processes on a control plane without a node,
#                    as before 2026-12 (no root needed): to compare with earlier figures
#   JOBS=J           parallel compile jobs for the build step (default 2)
#   ROLE_WRAPPER="W" with --processes: the controller runs as `W banlieue controller ...`
#                    (e.g. "heaptrack -o /tmp/controller"), to profile it; its RSS figures are
#                    then the wrapper's process, not the role's
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
usage() { sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; }
argv=("$@")

vms=100 threads=16 qps="" keep=0 limit=1 limit_apply=0 mode=node create_seconds=0 max_creates=""
baseline="" resync="" watch=1
while [ $# -gt 0 ]; do
  case "$1" in
    --vms) vms=${2:?--vms needs a number}; shift 2 ;;
    --threads) threads=${2:?--threads needs a number}; shift 2 ;;
    --kube-qps) qps=${2:?--kube-qps needs a number}; shift 2 ;;
    --no-limit) limit=0; shift ;;
    --limit-apply) limit_apply=1; shift ;;
    --create-seconds) create_seconds=${2:?--create-seconds needs a number}; shift 2 ;;
    --max-creates) max_creates=${2:?--max-creates needs a number}; shift 2 ;;
    --baseline) baseline=${2:?--baseline needs a file}; shift 2 ;;
    --resync-seconds) resync=${2:?--resync-seconds needs a number}; shift 2 ;;
    --no-watch) watch=0; shift ;;
    --keep) keep=1; shift ;;
    --processes) mode=processes; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "scripts/bench.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
[[ $vms =~ ^[1-9][0-9]*$ ]] || { echo "scripts/bench.sh: --vms must be a positive integer" >&2; exit 2; }
[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "scripts/bench.sh: --threads must be a positive integer" >&2; exit 2; }
[ -z "$qps" ] || [[ $qps =~ ^[0-9]+([.][0-9]+)?$ ]] ||
  { echo "scripts/bench.sh: --kube-qps must be a number" >&2; exit 2; }
[[ $create_seconds =~ ^[0-9]+$ ]] ||
  { echo "scripts/bench.sh: --create-seconds must be a whole number of seconds" >&2; exit 2; }
[ -z "$max_creates" ] || [[ $max_creates =~ ^[1-9][0-9]*$ ]] ||
  { echo "scripts/bench.sh: --max-creates must be a positive integer" >&2; exit 2; }
[ -z "$resync" ] || [[ $resync =~ ^[1-9][0-9]*$ ]] ||
  { echo "scripts/bench.sh: --resync-seconds must be a positive integer" >&2; exit 2; }
if [ -n "$baseline" ]; then
  baseline_vms=$(jq -er '.vms' "$baseline" 2>/dev/null) && jq -e \
    '(.controller_rss_mb | numbers) and (.provider_rss_mb | numbers)' "$baseline" >/dev/null 2>&1 ||
    { echo "scripts/bench.sh: --baseline $baseline is not the JSON document of a bench run" >&2; exit 2; }
  [ "$baseline_vms" -lt "$vms" ] ||
    { echo "scripts/bench.sh: --baseline must be a run at fewer VMs than --vms $vms (it has $baseline_vms)" >&2; exit 2; }
  baseline=$(realpath "$baseline")  # the script changes directory and may re-run under sudo
fi
jobs=${JOBS:-2}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "scripts/bench.sh: JOBS must be a positive integer" >&2; exit 2; }
if [ "$mode" = node ] && [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then
    exec sudo --preserve-env=JOBS,BANLIEUE_K8S_CACHE "$0" "${argv[@]+"${argv[@]}"}"
  fi
  echo "scripts/bench.sh: needs root for the node (or --processes)" >&2
  exit 1
fi

started=$SECONDS
say() { printf '[bench %4ss] %s\n' "$((SECONDS - started))" "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

build=$root/build/release
bin=$build/host/banlieue
plugin_dir=$build/plugins-dir

# The node's image carries every in-tree plugin (deploy/local/images packages them all) and the
# file plugin's provider image its plugin: all are built, whichever mode runs.
say "building the release preset (banlieue, the plugins, converge_bench, abi_call_bench; -j$jobs)"
deploy/local/build >&2
cmake --preset release >/dev/null
cmake --build --preset release -j"$jobs" --target banlieue banlieue-provider-file \
  banlieue-provider-libvirt banlieue-provider-vsphere banlieue-provider-proxmox converge_bench \
  abi_call_bench >&2
[ -x "$bin" ] || fail "$bin was not built"
[ -f "$plugin_dir/file/provider.json" ] || fail "the file plugin is not in $plugin_dir/file"

state=$(mktemp -d /tmp/banlieue-bench.XXXXXX)
kubeconfig=$state/kubeconfig
logs=$state/bench-logs
mkdir -p "$logs"
role_pids=()
k() { kubectl --kubeconfig "$kubeconfig" "$@"; }
provider_workload=banlieue-provider-file-files  # the operator's name for it (workload_names.cc)

# Stops the roles, and waits until their processes are gone (the minimal client must not share
# the CPU with them). Host processes: by pid, SIGTERM, then SIGKILL after 10 s. Pods: their
# Deployments go to 0 replicas; the kubelet stops the containers (SIGTERM, then its grace).
stop_roles() {
  local pid
  if [ "$mode" = node ]; then
    if [ ${#role_pids[@]} -gt 0 ]; then
      k scale deployment -n banlieue-system banlieue-controller --replicas 0 >/dev/null || true
      k scale deployment -n bench "$provider_workload" --replicas 0 >/dev/null || true
      for pid in "${role_pids[@]}"; do
        for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$pid" 2>/dev/null; then
          fail "the role with pid $pid was still running 60 s after its scale-down"
        fi
      done
    fi
    role_pids=()
    return 0
  fi
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
  if [ "$rc" -ne 0 ] && [ "$mode" = node ] && [ -f "$state/run/node.env" ]; then
    # The pods' logs go with the node: their last lines, for the failure above.
    for role in banlieue-system/banlieue-controller "bench/$provider_workload"; do
      say "the last lines of $role:"
      k --request-timeout=10s logs -n "${role%%/*}" "deploy/${role#*/}" --tail 10 >&2 2>&1 || true
    done
  fi
  # Host processes are stopped here; pods stop with the node, or stay up with --keep.
  [ "$mode" = node ] || stop_roles
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

if [ "$mode" = node ]; then
  say "starting a private control plane and node in $state (image from $build)"
  deploy/local/up --state-dir "$state" --node --image-build-dir "$build" >&2
else
  say "starting a private control plane in $state"
  deploy/local/up --state-dir "$state" >&2
fi

say "installing the CRDs (deploy/crds and the file plugin's)"
k apply --server-side --field-manager=banlieue-bench -f deploy/crds \
  -f "$plugin_dir/file/crds/filemachines.yaml" >/dev/null
k wait --for=condition=Established --timeout=60s crd --all >/dev/null

version=$("$bin" --version | awk '{ print $2 }')
backend_dir=/var/lib/bench-files  # an emptyDir of the provider pod
if [ "$mode" = node ]; then
  # A Managed class of the file plugin's provider image, as a platform team would write it;
  # no operator runs, so the script publishes the status the operator would (below).
  class_spec="{backend: file, deployment: Managed, plugin: {path: /usr/lib/banlieue/plugins/file},
    image: {repository: localhost/banlieue-provider-file, tag: \"$version\", pullPolicy: IfNotPresent}}"
  endpoint=file://$backend_dir
else
  class_spec="{backend: file, deployment: External, plugin: {path: file}}"
  endpoint=file://$state/file-backend
  mkdir -p "$state/file-backend"
fi

# What `banlieue bootstrap operator` and the operator would have done: the namespace, the
# ProviderClass and its published machineKind (the operator reads it from provider.json).
k create namespace bench >/dev/null
k create namespace bench-limit >/dev/null
if [ "$limit_apply" -eq 1 ]; then
  k create namespace bench-limit-apply >/dev/null
  k create namespace bench-limit-again >/dev/null
fi
k apply -f - >/dev/null <<YAML
apiVersion: banlieue.io/v1alpha1
kind: ProviderClass
metadata: {name: file}
spec: $class_spec
---
apiVersion: banlieue.io/v1alpha1
kind: Provider
metadata: {name: files, namespace: bench}
spec:
  providerClassRef: {name: file}
  connection: {endpoint: "$endpoint$([ "$create_seconds" -eq 0 ] || echo "?createSeconds=$create_seconds")"}
$([ -z "$max_creates" ] || echo "  maxConcurrentCreates: $max_creates")
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

qps_flags=()
if [ -n "$qps" ]; then
  qps_flags=(--kube-qps "$qps" --kube-burst "$(awk -v q="$qps" 'BEGIN { printf "%d", q * 1.5 + 1 }')")
fi
provider_args=(provider file --provider bench/files --leader-election-namespace bench)
[ -z "$resync" ] || provider_args+=(--resync-seconds "$resync")
[ "$watch" = 1 ] || provider_args+=(--watch-seconds 0)
controller_args=(controller --no-leader-elect)

# Each started role sets role_pid (host pid), role_url (http://<address>:<port> of /metrics) and
# startup_ms.
if [ "$mode" = processes ]; then
  free_port() {
    local port
    for _ in $(seq 1 200); do
      port=$((20000 + RANDOM % 40000))
      [ -z "$(ss -Htan "sport = :$port" 2>/dev/null)" ] && { echo "$port"; return 0; }
    done
    fail "no free loopback port"
  }
  # start_role <name> <args...>: starts it, waits for /readyz and sets startup_ms (milliseconds
  # from exec to the first ready answer). Not run in a subshell, so the pid is in role_pids
  # before anything can fail.
  start_role() {
    local name=$1 health metrics t0 pid
    shift
    health=$(free_port) metrics=$(free_port)
    t0=$(now_ms)
    local wrapper=()
    [ "$name" = controller ] && [ -n "${ROLE_WRAPPER:-}" ] && read -r -a wrapper <<<"$ROLE_WRAPPER"
    ${wrapper[@]+"${wrapper[@]}"} "$bin" --log-level info "$@" --kubeconfig "$kubeconfig" --bind-address 127.0.0.1 \
      --health-port "$health" --metrics-port "$metrics" "${qps_flags[@]+"${qps_flags[@]}"}" \
      >"$logs/$name.log" 2>&1 </dev/null &
    pid=$!
    role_pids+=("$pid")
    role_pid=$pid role_url=http://127.0.0.1:$metrics
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
  say "starting banlieue provider file (Provider bench/files)"
  start_role provider "${provider_args[@]}" --plugin-dir "$plugin_dir"
  provider_pid=$role_pid provider_url=$role_url provider_startup_ms=$startup_ms
  say "starting banlieue controller (no leader election: one replica)"
  start_role controller "${controller_args[@]}"
  controller_pid=$role_pid controller_url=$role_url controller_startup_ms=$startup_ms
else
  node_sock=$state/node/containerd.sock
  # CNI host-local (deploy/local/node.sh) records each pod address as a file named after it.
  ipam_dir=$state/node/cni/ipam/banlieue-pods

  # The RBAC as installed: `banlieue bootstrap operator --dry-run` with this build's plugins,
  # converted to JSON by kubectl. Taken from it: the namespaces, everything of the controller
  # (ServiceAccount, ClusterRoles, bindings, its Deployment), the file plugin's two ClusterRoles
  # (banlieue-infrastructure-file aggregates into the controller's, docs/adr/0043),
  # banlieue-provider and the provider-imports ClusterRole the operator binds per Provider.
  # Not taken: the operator and the imagebuilder, which have nothing to do here.
  "$bin" --log-level warn bootstrap operator --dry-run --skip-crds --skip-provider-classes \
    --plugin-dir "$plugin_dir" --image "localhost/banlieue:$version" >"$logs/bootstrap.yaml"
  k create --dry-run=client -o json -f "$logs/bootstrap.yaml" |
    jq -s '[.[] | if .kind == "List" then .items[] else . end]' >"$logs/bootstrap.json"
  jq '{apiVersion: "v1", kind: "List", items: [.[] | select(.kind != "Deployment") | select(
        .kind == "Namespace"
        or .metadata.labels["app.kubernetes.io/component"] == "controller"
        or (.kind == "ClusterRole" and (.metadata.name == "banlieue-provider-file"
                                        or .metadata.name == "banlieue-infrastructure-file"
                                        or .metadata.name == "banlieue-provider"
                                        or .metadata.name == "banlieue-provider-imports")))]}' \
    "$logs/bootstrap.json" >"$logs/rbac.json"
  grep -q '"banlieue-provider-file"' "$logs/rbac.json" ||
    fail "bootstrap operator --plugin-dir $plugin_dir wrote no ClusterRole banlieue-provider-file"

  # What the operator mints for a Managed Provider (host/roles/operator/workload.cc,
  # providerRoleRules and buildWorkload; its name from workload_names.cc): a ServiceAccount, a
  # Role for its own Lease and Events in the Provider's namespace, its backend's ClusterRole and
  # banlieue-provider, and read access to its import Jobs and their pods in the build namespace. The import Jobs'
  # own Role is left out: the file plugin imports no images.
  cluster_name=banlieue-provider-file-bench-files
  cat >"$logs/provider-rbac.yaml" <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: $provider_workload, namespace: bench}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: $provider_workload, namespace: bench}
rules:
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [create]}
- {apiGroups: [coordination.k8s.io], resources: [leases], resourceNames: [$provider_workload], verbs: [get, update, patch]}
- {apiGroups: ["", events.k8s.io], resources: [events], verbs: [create, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: $provider_workload, namespace: bench}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: $provider_workload}
subjects: [{kind: ServiceAccount, name: $provider_workload, namespace: bench}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: $cluster_name, namespace: banlieue-imagebuild}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: banlieue-provider-imports}
subjects: [{kind: ServiceAccount, name: $provider_workload, namespace: bench}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $cluster_name}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: banlieue-provider-file}
subjects: [{kind: ServiceAccount, name: $provider_workload, namespace: bench}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $cluster_name-base}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: banlieue-provider}
subjects: [{kind: ServiceAccount, name: $provider_workload, namespace: bench}]
YAML
  say "installing the roles' RBAC (bootstrap operator's, and the operator's for the Provider)"
  k apply -f "$logs/rbac.json" >/dev/null
  k apply -f "$logs/provider-rbac.yaml" >/dev/null

  # The Deployments: bootstrap's controller Deployment (image, securityContext, probes,
  # resources as shipped) with the benchmark's arguments, and the provider's made from it as
  # the operator makes it: its ServiceAccount, the provider image, /tmp as an emptyDir (the
  # root filesystem is read-only), plus an emptyDir for the file backend. /metrics listens on
  # every address of the pod (the shipped default is loopback), so the host scrapes it
  # through the pod's address on the node's bridge.
  json_array() { printf '%s\n' "$@" | jq -cRs 'rtrimstr("\n") | split("\n")'; }
  common_args=(--metrics-bind-address 0.0.0.0 "${qps_flags[@]+"${qps_flags[@]}"}")
  jq --argjson args "$(json_array --log-level info "${controller_args[@]}" "${common_args[@]}")" \
    '.[] | select(.kind == "Deployment" and .metadata.name == "banlieue-controller")
     | .spec.template.spec.containers[0].args = $args' "$logs/bootstrap.json" \
    >"$logs/controller-deployment.json"
  [ -s "$logs/controller-deployment.json" ] || fail "no controller Deployment in $logs/bootstrap.json"
  jq --arg name "$provider_workload" --arg image "localhost/banlieue-provider-file:$version" \
    --arg backend "$backend_dir" \
    --argjson args "$(json_array --log-level info "${provider_args[@]}" \
      --plugin-dir /usr/lib/banlieue/plugins "${common_args[@]}")" \
    '.metadata.name = $name | .metadata.namespace = "bench"
     | .metadata.labels["app.kubernetes.io/component"] = "provider-file"
     | .spec.selector.matchLabels["app.kubernetes.io/component"] = "provider-file"
     | .spec.template.metadata.labels["app.kubernetes.io/component"] = "provider-file"
     | .spec.template.spec.serviceAccountName = $name
     | .spec.template.spec.containers[0] |= (.name = "provider" | .image = $image | .args = $args
         | .volumeMounts = [{name: "tmp", mountPath: "/tmp"}, {name: "backend", mountPath: $backend}])
     | .spec.template.spec.volumes = [{name: "tmp", emptyDir: {}}, {name: "backend", emptyDir: {}}]' \
    "$logs/controller-deployment.json" >"$logs/provider-deployment.json"

  pod_addresses() {
    local f
    for f in "$ipam_dir"/*; do
      [[ ${f##*/} =~ ^[0-9]+(\.[0-9]+){3}$ ]] && echo "${f##*/}"
    done
    return 0
  }
  # The host pid of a container, from the node's containerd (its tasks carry host pids).
  task_pid() {
    ctr --address "$node_sock" -n k8s.io tasks ls 2>/dev/null |
      awk -v id="$1" '$1 == id && $3 == "RUNNING" { print $2 }'
  }
  # container_of <namespace> <pod address>: "<pod> <container id> <restarts>" of the running
  # container of the pod with that address, or nothing (yet).
  container_of() {
    k get pods -n "$1" -o json | jq -r --arg ip "$2" '.items[] | select(.status.podIP == $ip)
      | .metadata.name as $pod | .status.containerStatuses[0]? | select(.state.running != null)
      | "\($pod) \(.containerID | sub("^containerd://"; "")) \(.restartCount)"' | head -n 1
  }
  # start_role <name> <namespace> <deployment.json>: applies the Deployment, waits for its pod's
  # /readyz through the pod's address and sets startup_ms: from the container process's start
  # (its start time in /proc/<pid>/stat; runc forks it when the container is created and it
  # execs banlieue when the container starts) to the first 200 of /readyz, polled every 10 ms.
  # The address is taken when CNI allocates it, before the container exists, so the polls
  # begin before the process does.
  start_role() {
    local name=$1 ns=$2 manifest=$3 before ip="" a deadline=$((SECONDS + 180)) polls=0 uptime
    local info pod container restarts pid ticks deployment
    deployment=$(jq -r .metadata.name "$manifest")
    before=$(pod_addresses)
    k apply -f "$manifest" >/dev/null
    while true; do
      # A sandbox that failed and was made again has a new address.
      if [ -z "$ip" ] || [ ! -e "$ipam_dir/$ip" ]; then
        ip=""
        for a in $(pod_addresses); do grep -qxF "$a" <<<"$before" || ip=$a; done
      fi
      if [ -n "$ip" ]; then
        curl -sf -o /dev/null --max-time 1 "http://$ip:8081/readyz" && break
        polls=$((polls + 1))
      fi
      if [ "$SECONDS" -ge "$deadline" ]; then
        k describe pods -n "$ns" >"$logs/$name-pods.txt" 2>&1 || true
        fail "$name (${ip:-no pod address}) was not ready within 180 s: $(k logs -n "$ns" "deploy/$deployment" --tail 5 2>&1 || true) (pods: $logs/$name-pods.txt)"
      fi
      sleep 0.01
    done
    read -r uptime _ </proc/uptime
    [ "$polls" -gt 0 ] || say "warning: $name answered the first poll; its startup_ms is an upper bound"
    # The API learns the container id from the kubelet's next status update.
    until info=$(container_of "$ns" "$ip") && [ -n "$info" ]; do
      [ "$SECONDS" -lt "$deadline" ] || fail "$name: no running container with address $ip in the API"
      sleep 0.2
    done
    read -r pod container restarts <<<"$info"
    pid=$(task_pid "$container")
    [ -n "$pid" ] || fail "$name: containerd has no running task for container $container"
    grep -q "$container" "/proc/$pid/cgroup" ||
      fail "$name: pid $pid is not in the cgroup of container $container"
    [ "$(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -d' ' -f1)" = /usr/bin/banlieue ] ||
      fail "$name: pid $pid is not /usr/bin/banlieue: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
    ticks=$(sed 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f20)
    startup_ms=$(awk -v u="$uptime" -v t="$ticks" -v hz="$(getconf CLK_TCK)" \
      'BEGIN { printf "%d", (u - t / hz) * 1000 }')
    # As the container's PID 1, banlieue forks once and the role runs in the child while the
    # parent only reaps (docs/adr/0045): RSS is the child's.
    local child
    child=$(pgrep -P "$pid" -x banlieue | head -n 1)
    [ -n "$child" ] || fail "$name: pid $pid (the container's init) has no banlieue child"
    role_pids+=("$pid")
    role_pid=$pid role_rss_pid=$child role_url=http://$ip:8080 role_container=$container
    say "  $name: pod $pod, $ip, pid $pid (role: $child), container ${container:0:12}, restarts $restarts"
  }
  say "starting banlieue provider file (Deployment bench/$provider_workload, Provider bench/files)"
  start_role provider bench "$logs/provider-deployment.json"
  provider_pid=$role_pid provider_url=$role_url provider_startup_ms=$startup_ms
  provider_container=$role_container provider_rss_pid=$role_rss_pid
  say "starting banlieue controller (Deployment banlieue-system/banlieue-controller; no leader election: one replica)"
  start_role controller banlieue-system "$logs/controller-deployment.json"
  controller_pid=$role_pid controller_url=$role_url controller_startup_ms=$startup_ms
  controller_container=$role_container controller_rss_pid=$role_rss_pid
fi

say "waiting for the Provider to be Ready and the image ready on it"
k wait --for=condition=Ready --timeout=120s -n bench provider/files >/dev/null ||
  fail "Provider bench/files is not Ready: $(k get provider files -n bench -o yaml)"
for _ in $(seq 1 1200); do
  ready=$(k get vmimage bench -o jsonpath='{.status.perProvider[?(@.providerName=="files")].ready}')
  [ "$ready" = true ] && break
  sleep 0.1
done
[ "$ready" = true ] || fail "VMImage bench is not ready on files: $(k get vmimage bench -o yaml)"

# Metrics: banlieue_kube_write_requests_total and controller_runtime_reconcile_total of one role.
scrape() { curl -sf --max-time 10 "$1/metrics" >"$2" || fail "cannot scrape $1/metrics"; }
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
  awk '/^rest_client_requests_total\{/ {
         v = $0; sub(/.*[{,]method="/, "", v); sub(/".*/, "", v); n[v] += $NF
       }
       /^banlieue_kube_client_throttled_total / { n["throttled"] += $NF }
       END { for (v in n) print v, n[v] }' "$1"
}
# "<cause> <count>" of the Events a role recorded but did not write (queue full, rate limit,
# API error).
events_dropped_of() {
  awk '/^banlieue_events_dropped_total\{/ {
         c = $0; sub(/.*[{,]cause="/, "", c); sub(/".*/, "", c); n[c] += $NF
       }
       END { for (c in n) print c, n[c] }' "$1"
}
reconciles_of() { awk '/^controller_runtime_reconcile_total\{/ { n += $NF } END { print n + 0 }' "$1"; }
# delta <before> <after> [extractor]: "<key> <after - before>" for each key that changed.
delta() {
  local of=${3:-writes_of}
  # FILENAME, not NR == FNR: that also holds in the second file when the first is empty.
  awk 'FILENAME == ARGV[1] { b[$1] = $2; next } { d = $2 - b[$1]; if (d != 0) print $1, d }' \
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

scrape "$controller_url" "$logs/controller.0"
scrape "$provider_url" "$logs/provider.0"

say "converging $vms VirtualMachines ($threads client threads)"
converge_json=$("$build/bench/converge_bench" converge "$kubeconfig" bench "$vms" "$threads" \
  $((120 + vms))) || fail "the VMs did not converge (logs: $logs)"
say "converged: $converge_json"
# The steady state starts once the roles' writes (Lease renewals aside) have been still for a
# second, at most 10 s after convergence: a VM's Ready Event is posted by an event writer just
# after its Ready status, so the last few belong to convergence, not to the rest after it. A
# role that keeps writing is still seen: the 60 s window follows.
settle_started=$(now_ms)
scrape "$controller_url" "$logs/controller.1"
scrape "$provider_url" "$logs/provider.1"
for _ in $(seq 10); do
  sleep 1
  scrape "$controller_url" "$logs/controller.settle"
  scrape "$provider_url" "$logs/provider.settle"
  still=1
  for role in controller provider; do
    [ "$(delta "$logs/$role.1" "$logs/$role.settle" | not_leases)" = "" ] || still=0
    mv "$logs/$role.settle" "$logs/$role.1"
  done
  [ "$still" = 1 ] && break
done
settle_seconds=$(awk -v ms="$(($(now_ms) - settle_started))" 'BEGIN { printf "%.1f", ms / 1000 }')

# The file backend's own count of the calls that reached it (one line each in its directory's
# `calls`), read through the provider's root in node mode: the backend's view, not the host's.
if [ "$mode" = node ]; then
  calls_file=/proc/$provider_pid/root$backend_dir/calls
else
  calls_file=$state/file-backend/calls
fi
backend_calls() { if [ -f "$calls_file" ]; then wc -l <"$calls_file"; else echo 0; fi; }
calls_converged=$(backend_calls)
cp "$calls_file" "$logs/backend-calls.1" 2>/dev/null || : >"$logs/backend-calls.1"

say "steady state: counting writes and backend calls for 60 s"
sleep 60
scrape "$controller_url" "$logs/controller.2"
scrape "$provider_url" "$logs/provider.2"
calls_steady=$(($(backend_calls) - calls_converged))
steady_calls_by_method=$(tail -n +$((calls_converged + 1)) "$calls_file" 2>/dev/null |
  awk '{ n[$1]++ } END { for (m in n) print m, n[m] }' | counts_json)
converge_calls_by_method=$(awk '{ n[$1]++ } END { for (m in n) print m, n[m] }' \
  "$logs/backend-calls.1" | per_vm_json)

# A role that restarted during the run would have reset its counters and its peak RSS.
if [ "$mode" = node ]; then
  [ "$(task_pid "$controller_container")" = "$controller_pid" ] ||
    fail "the controller's container restarted during the run: its figures would be wrong"
  [ "$(task_pid "$provider_container")" = "$provider_pid" ] ||
    fail "the provider's container restarted during the run: its figures would be wrong"
fi
# CPU time the container's limit (the shipped 1 CPU) held the role back, over its whole life:
# cgroup v1's cpu.stat throttled_time (ns), or v2's throttled_usec; null for host processes.
throttled_seconds() {
  local path stat
  [ "$mode" = node ] || { echo null; return 0; }
  path=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ { print $3 }' "/proc/$1/cgroup")
  if [ -n "$path" ]; then
    stat=/sys/fs/cgroup/cpu$path/cpu.stat
  else
    stat=/sys/fs/cgroup$(awk -F: '$1 == 0 { print $3 }' "/proc/$1/cgroup")/cpu.stat
  fi
  awk '$1 == "throttled_time" { v = $2 / 1e9 } $1 == "throttled_usec" { v = $2 / 1e6 }
       END { if (v == "") print "null"; else printf "%.2f", v }' "$stat" 2>/dev/null || echo null
}
controller_throttled=$(throttled_seconds "$controller_pid")
provider_throttled=$(throttled_seconds "$provider_pid")
hwm_mb() { awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
controller_rss_mb=$(hwm_mb "${controller_rss_pid:-$controller_pid}")
provider_rss_mb=$(hwm_mb "${provider_rss_pid:-$provider_pid}")
stop_roles

limit_json=""
if [ "$limit" -eq 1 ]; then
  say "the minimal client: the same $vms VMs' unavoidable writes, $threads threads"
  limit_json=$("$build/bench/converge_bench" limit "$kubeconfig" bench vm-0 bench-limit "$vms" \
    "$threads") || fail "the minimal client failed"
  say "minimal client: $limit_json"
  if [ "$limit_apply" -eq 1 ]; then
    say "the minimal client with the roles' server-side applies"
    limit_apply_json=$("$build/bench/converge_bench" limit "$kubeconfig" bench vm-0 \
      bench-limit-apply "$vms" "$threads" apply) || fail "the minimal client (apply) failed"
    say "minimal client (apply): $limit_apply_json"
    say "the minimal client again, a third namespace"
    limit_again_json=$("$build/bench/converge_bench" limit "$kubeconfig" bench vm-0 \
      bench-limit-again "$vms" "$threads") || fail "the minimal client (again) failed"
    say "minimal client (again): $limit_again_json"
  fi
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
creates_took_seconds=$(field "$converge_json" create_seconds)
limit_seconds=$(field "$limit_json" limit_seconds)
limit_apply_seconds=$(field "${limit_apply_json:-}" limit_seconds)
limit_again_seconds=$(field "${limit_again_json:-}" limit_seconds)
ratio=null
if [ -n "$limit_seconds" ]; then
  ratio=$(awk -v a="$converge_seconds" -v b="$limit_seconds" 'BEGIN { printf "%.2f", a / b }')
else
  limit_seconds=null
fi

# A slow backend: at best ceil(N / C) rounds of C creates of S seconds each.
backend_bound_json=null
if [ "$create_seconds" -gt 0 ]; then
  slots=${max_creates:-16}
  backend_bound_json=$(awk -v n="$vms" -v s="$create_seconds" -v c="$slots" -v t="$converge_seconds" \
    'BEGIN { w = int((n + c - 1) / c); f = w * s
             printf "{\"create_seconds\": %d, \"max_concurrent_creates\": %d, \"floor_seconds\": %.2f, \"backend_bound_ratio\": %.3f}", s, c, f, t / f }')
fi
# Peak RSS growth per VM against a run at a smaller N (issue #23's marginal cost, in KiB).
marginal_json=null
if [ -n "$baseline" ]; then
  marginal_json=$(jq -c --argjson n "$vms" --argjson c "$controller_rss_mb" --argjson p "$provider_rss_mb" \
    '.vms as $base | def kib_per_vm(rss; base_rss): (rss - base_rss) * 1024 / ($n - $base) * 100 | round / 100;
     {from_vms: $base, controller: kib_per_vm($c; .controller_rss_mb),
      provider: kib_per_vm($p; .provider_rss_mb)}' "$baseline")
fi
c_create=$(delta "$logs/controller.0" "$logs/controller.1")
p_create=$(delta "$logs/provider.0" "$logs/provider.1")
c_steady=$(delta "$logs/controller.1" "$logs/controller.2")
p_steady=$(delta "$logs/provider.1" "$logs/provider.2")
steady_all=$(printf '%s\n%s\n' "$c_steady" "$p_steady" | sed '/^$/d')
c_total=$(total <<<"$c_create")
p_total=$(total <<<"$p_create")
# Every request of each role during convergence (rest_client_requests_total, reads included,
# the client-side throttle count left out), then per VM with the user's create: issue #23's
# requests_per_vm. The provider's Lease renewals (a GET and a PUT every 2 s, whatever N) are in
# it; lease_requests_per_vm says how much of it they are.
requests_total() { delta "$1" "$2" requests_of | grep -v '^throttled ' | total; }
c_requests=$(requests_total "$logs/controller.0" "$logs/controller.1")
p_requests=$(requests_total "$logs/provider.0" "$logs/provider.1")
lease_writes=$(printf '%s\n%s\n' "$c_create" "$p_create" | grep '^leases ' | total)
c_rec=$(($(reconciles_of "$logs/controller.1") - $(reconciles_of "$logs/controller.0")))
p_rec=$(($(reconciles_of "$logs/provider.1") - $(reconciles_of "$logs/provider.0")))

cat <<JSON
{
  "vms": $vms,
  "converge_seconds": $converge_seconds,
  "limit_seconds": $limit_seconds,
  "ratio_to_limit": $ratio,
  "limit_apply_seconds": ${limit_apply_seconds:-null},
  "limit_again_seconds": ${limit_again_seconds:-null},
  "create_seconds": $creates_took_seconds,
  "limit_writes_per_vm": {"user": 1, "unavoidable": 6},
  "api_writes_per_vm": {"controller": $(awk -v a="$c_total" -v n="$vms" 'BEGIN { printf "%.3f", a / n }'), "provider": $(awk -v a="$p_total" -v n="$vms" 'BEGIN { printf "%.3f", a / n }'), "all": $(awk -v a="$c_total" -v b="$p_total" -v n="$vms" 'BEGIN { printf "%.3f", (a + b) / n }')},
  "api_writes_per_vm_by_resource": {"controller": $(per_vm_json <<<"$c_create"), "provider": $(per_vm_json <<<"$p_create")},
  "requests_per_vm": {"user": 1, "controller": $(awk -v a="$c_requests" -v n="$vms" 'BEGIN { printf "%.3f", a / n }'), "provider": $(awk -v a="$p_requests" -v n="$vms" 'BEGIN { printf "%.3f", a / n }'), "all": $(awk -v a="$c_requests" -v b="$p_requests" -v n="$vms" 'BEGIN { printf "%.3f", 1 + (a + b) / n }'), "lease_requests_per_vm": $(awk -v a="$lease_writes" -v n="$vms" 'BEGIN { printf "%.3f", 2 * a / n }')},
  "api_requests_per_vm_by_verb": {"controller": $(delta "$logs/controller.0" "$logs/controller.1" requests_of | per_vm_json), "provider": $(delta "$logs/provider.0" "$logs/provider.1" requests_of | per_vm_json)},
  "reconciles_per_vm": {"controller": $(awk -v a="$c_rec" -v n="$vms" 'BEGIN { printf "%.3f", a / n }'), "provider": $(awk -v a="$p_rec" -v n="$vms" 'BEGIN { printf "%.3f", a / n }')},
  "settle_seconds": $settle_seconds,
  "steady_state_writes_60s": $(not_leases <<<"$steady_all" | total),
  "events_dropped": {"controller": $(delta "$logs/controller.0" "$logs/controller.2" events_dropped_of | counts_json), "provider": $(delta "$logs/provider.0" "$logs/provider.2" events_dropped_of | counts_json)},
  "steady_state_lease_renewals_60s": $(grep '^leases ' <<<"$steady_all" | total),
  "steady_state_writes_by_resource": {"controller": $(counts_json <<<"$c_steady"), "provider": $(counts_json <<<"$p_steady")},
  "backend_calls_per_vm": $converge_calls_by_method,
  "steady_state_backend_calls_60s": $calls_steady,
  "provider_resync_seconds": ${resync:-600},
  "change_feed": $([ "$watch" = 1 ] && echo true || echo false),
  "steady_state_backend_calls_by_method": $steady_calls_by_method,
  "controller_rss_mb": $controller_rss_mb,
  "provider_rss_mb": $provider_rss_mb,
  "marginal_kb_per_vm": $marginal_json,
  "startup_ms": {"controller": $controller_startup_ms, "provider": $provider_startup_ms},
  "cpu_throttled_seconds": {"controller": $controller_throttled, "provider": $provider_throttled},
  "backend_bound": $backend_bound_json,
  "abi_call_us": $abi_call_us,
  "settings": {"client_threads": $threads, "kube_qps": "${qps:-role default}", "plugin": "file (examples/file-provider)", "roles": "$([ "$mode" = node ] && echo "pods on the real node" || echo "host processes")"},
  "machine": {"nproc": $(nproc), "mem_mb": $(awk '/^MemTotal:/ { printf "%d", $2 / 1024 }' /proc/meminfo), "loadavg_at_end": "$(cut -d' ' -f1-3 /proc/loadavg)"}
}
JSON
say "done in $((SECONDS - started)) s"
