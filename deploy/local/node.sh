# The local cluster's node: containerd, the kubelet and kube-proxy, in a network namespace of
# their own. Shared by deploy/local/{up,down,status}. Sourced, not run; needs root.
# shellcheck shell=bash
#
# Layout (i is the node's index, the first free one from 1 to 250 on this machine):
#   network namespace banlieue-node-<i>, joined to the host by a veth pair:
#     host side  bnl<i>h  10.213.<i>.1/24   the apiserver listens here; so do the backends
#                                           the pods reach (libvirtd, vcsim, the fake PVE API)
#     node side  bnl<i>n  10.213.<i>.2/24   the node's InternalIP: kubelet (10250), kube-proxy
#   pods: bridge bnlpods inside the namespace, 10.214.<i>.0/24 (CNI bridge + host-local),
#     masqueraded to the node address when they leave it; the host routes the pod range to
#     the node, so `kubectl get pods -o wide` addresses answer from the host.
# The namespace has no default route: a pod reaches the host side and the pod range, nothing
# else (the network rule of DESIGN.md §6). kube-proxy's iptables rules, the bridge and the
# pods' veths live and die with the namespace, so `down` leaves no rule or interface behind.
# containerd keeps its root, state, socket and the pods' network namespaces under
# STATE/node; the kubelet its root directory; `down` unmounts everything under STATE/node.

NODE_COMPONENTS=(containerd kubelet kube-proxy)
NODE_LOCK=/run/lock/banlieue-node.lock
PAUSE_IMAGE=localhost/pause:3.4.1
KUBE_NODE_NAME=banlieue-node

node_env() { echo "$STATE/run/node.env"; }

# node_load: sets NODE_INDEX, NODE_NETNS, HOST_IP, NODE_IP, POD_CIDR from the state dir;
# returns 1 when this cluster has no node.
node_load() {
  [ -f "$(node_env)" ] || return 1
  # shellcheck disable=SC1090
  . "$(node_env)"
}

# The first index whose namespace, interfaces and addresses are all unused on this machine.
node_allocate() {
  local i
  for i in $(seq 1 250); do
    [ -e "/run/netns/banlieue-node-$i" ] && continue
    ip link show "bnl${i}h" >/dev/null 2>&1 && continue
    ip -4 -o addr show | grep -q " 10\.21[34]\.$i\." && continue
    ip -4 route show | grep -qE "^10\.21[34]\.$i\." && continue
    echo "$i"
    return 0
  done
  return 1
}

# node_network_up: the namespace, veth pair and routes (idempotent).
node_network_up() {
  mkdir -p "$(dirname "$NODE_LOCK")"
  exec {lock_fd}>"$NODE_LOCK"
  flock "$lock_fd"
  if ! node_load; then
    local i
    i=$(node_allocate) || { flock -u "$lock_fd"; return 1; }
    cat >"$(node_env)" <<ENV
NODE_INDEX=$i
NODE_NETNS=banlieue-node-$i
HOST_IF=bnl${i}h
NODE_IF=bnl${i}n
HOST_IP=10.213.$i.1
NODE_IP=10.213.$i.2
POD_CIDR=10.214.$i.0/24
POD_GATEWAY=10.214.$i.1
ENV
    node_load
  fi
  if [ ! -e "/run/netns/$NODE_NETNS" ]; then
    ip netns add "$NODE_NETNS"
  fi
  if ! ip link show "$HOST_IF" >/dev/null 2>&1; then
    ip link add "$HOST_IF" type veth peer name "$NODE_IF" netns "$NODE_NETNS"
    ip addr add "$HOST_IP/24" dev "$HOST_IF"
    ip link set "$HOST_IF" up
    ip -n "$NODE_NETNS" addr add "$NODE_IP/24" dev "$NODE_IF"
    ip -n "$NODE_NETNS" link set "$NODE_IF" up
    ip -n "$NODE_NETNS" link set lo up
  fi
  ip route replace "$POD_CIDR" via "$NODE_IP" dev "$HOST_IF"
  # The node routes between its pods and the host side; per namespace, not the machine's.
  ip netns exec "$NODE_NETNS" sysctl -qw net.ipv4.ip_forward=1
  # Bridged pod-to-service-to-pod traffic must pass kube-proxy's rules.
  modprobe br_netfilter 2>/dev/null || true
  ip netns exec "$NODE_NETNS" sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true
  flock -u "$lock_fd"
}


node_dir() { echo "$STATE/node"; }

node_write_configs() {
  local d; d=$(node_dir)
  mkdir -p "$d/containerd/root" "$d/containerd/state" "$d/cni/net.d" "$d/cni/ipam" \
    "$d/kubelet" "$d/runc"
  cat >"$d/containerd.toml" <<TOML
# Written by deploy/local/up: this cluster's own containerd (nothing shared with the machine's).
version = 2
root = "$d/containerd/root"
state = "$d/containerd/state"
[grpc]
  address = "$d/containerd.sock"
[ttrpc]
  address = "$d/containerd.ttrpc.sock"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$d/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # This machine lacks CAP_SYS_RESOURCE: without it every sandbox fails to start.
  restrict_oom_score_adj = true
  # The pods' network namespaces live under the state directory, not the machine's /run/netns.
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        Root = "$d/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni/net.d"
TOML
  cat >"$d/cni/net.d/10-banlieue.conflist" <<CNI
{
  "cniVersion": "0.4.0",
  "name": "banlieue-pods",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "bnlpods",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$d/cni/ipam",
        "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$POD_GATEWAY"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
CNI
  cat >"$d/kubelet.yaml" <<KUBELET
# Written by deploy/local/up. cgroupfs without per-QoS cgroups, no node allocatable enforcement
# and no swap check: what this machine's cgroup layout allows. Image garbage collection is off,
# and so is eviction on disk: every image here is built locally and could not be pulled again,
# and under disk pressure the kubelet would taint the node (every new pod Pending) and delete
# the images no running container uses. A full disk fails a pod's writes instead;
# scripts/test.sh checks the free space before it starts. ("0%" turns a threshold off.)
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $STATE/pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $STATE/pki/kubelet.crt
tlsPrivateKeyFile: $STATE/pki/kubelet.key
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "0%"
  nodefs.inodesFree: "0%"
  imagefs.available: "0%"
  imagefs.inodesFree: "0%"
serializeImagePulls: false
# No DNS server runs here: the cluster DNS address is the host side of the node's veth pair, so
# a pod's lookup fails at once (nothing listens) instead of leaving the cluster's network, and
# the kubelet does not warn on every pod sync that no cluster DNS is configured.
clusterDNS: [$HOST_IP]
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
KUBELET
}

# node_certificates <sign_leaf-function>: the kubelet's client and serving certificates and
# kube-proxy's client certificate, each with the identity the apiserver's authorizers expect.
node_certificates() {
  local sign=$1 pki=$STATE/pki
  [ -f "$pki/kubelet.crt" ] && [ -f "$pki/kubelet-client.crt" ] && [ -f "$pki/kube-proxy.crt" ] && return 0
  "$sign" kubelet-client "/O=system:nodes/CN=system:node:$KUBE_NODE_NAME" "extendedKeyUsage=clientAuth"
  "$sign" kubelet "/CN=$KUBE_NODE_NAME" \
    "$(printf 'extendedKeyUsage=serverAuth\nsubjectAltName=IP:%s,DNS:%s' "$NODE_IP" "$KUBE_NODE_NAME")"
  "$sign" kube-proxy "/CN=system:kube-proxy" "extendedKeyUsage=clientAuth"
}

ctr_() { ctr --address "$(node_dir)/containerd.sock" -n k8s.io "$@"; }

# node_load_image <oci-archive>: imports an image into the node's containerd.
node_load_image() {
  ctr_ images import --all-platforms "$1" >/dev/null
}

node_start_containerd() {
  pid_of containerd >/dev/null && return 0
  start containerd nsenter --net="/run/netns/$NODE_NETNS" containerd --config "$(node_dir)/containerd.toml"
  local sock; sock=$(node_dir)/containerd.sock
  for _ in $(seq 1 60); do
    ctr --address "$sock" version >/dev/null 2>&1 && return 0
    if ! pid_of containerd >/dev/null; then
      exit_reason containerd
      fail "containerd $EXIT_REASON"
    fi
    sleep 0.5
  done
  fail "containerd did not answer on $sock within 30 s"
}

node_start_kubelet() {
  pid_of kubelet >/dev/null && return 0
  start kubelet nsenter --net="/run/netns/$NODE_NETNS" "$K8S_CACHE/bin/kubelet" \
    --config "$(node_dir)/kubelet.yaml" --kubeconfig "$STATE/kubelet.kubeconfig" \
    --root-dir "$(node_dir)/kubelet" --cert-dir "$(node_dir)/kubelet/pki" \
    --container-runtime remote --container-runtime-endpoint "unix://$(node_dir)/containerd.sock" \
    --pod-infra-container-image "$PAUSE_IMAGE" \
    --hostname-override "$KUBE_NODE_NAME" --node-ip "$NODE_IP" --v 1
}

node_start_kube_proxy() {
  pid_of kube-proxy >/dev/null && return 0
  start kube-proxy nsenter --net="/run/netns/$NODE_NETNS" "$K8S_CACHE/bin/kube-proxy" \
    --kubeconfig "$STATE/kube-proxy.kubeconfig" --hostname-override "$KUBE_NODE_NAME" \
    --proxy-mode iptables --cluster-cidr "$POD_CIDR" --bind-address "$NODE_IP" \
    --healthz-bind-address 127.0.0.1:10256 --metrics-bind-address 127.0.0.1:10249 \
    --conntrack-max-per-core 0
}

# node_wait_ready <seconds>: until the Node is Ready and the not-ready taint is gone.
node_wait_ready() {
  local node
  for _ in $(seq 1 $(($1 * 2))); do
    for c in "${NODE_COMPONENTS[@]}"; do
      if ! pid_of "$c" >/dev/null; then
        exit_reason "$c"
        fail "$c $EXIT_REASON"
      fi
    done
    node=$(api_get "/api/v1/nodes/$KUBE_NODE_NAME" | tr -d ' \n')
    if grep -q '"type":"Ready","status":"True"' <<<"$node" && ! grep -q 'node.kubernetes.io/not-ready' <<<"$node"; then
      return 0
    fi
    sleep 0.5
  done
  fail "node $KUBE_NODE_NAME did not become ready within $1 s (see $STATE/logs/kubelet.log)"
}

# stop_component <name> [grace]: SIGTERM, SIGKILL after grace seconds (default 10); 0 when it was
# running. A process that exited is done even while it waits to be reaped: these were started by
# another shell, so their parent is the machine's init, which may reap late (kill -0 answers for
# a zombie; waiting on it cost ~2 s per component).
stop_component() {
  local pid grace=${2:-10}
  pid=$(pid_of "$1") || { rm -f "$STATE/run/$1.pid"; return 1; }
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((grace * 10))); do alive "$pid" || break; sleep 0.1; done
  if alive "$pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
  fi
  alive "$pid" && { echo "deploy/local/down: $1 (pid $pid) would not stop" >&2; exit 1; }
  rm -f "$STATE/run/$1.pid"
  return 0
}
alive() { local state; state=$(state_of "$1"); [ -n "$state" ] && [ "$state" != Z ]; }

# node_down: the kubelet and kube-proxy, every container, containerd and its shims, then the
# mounts under STATE/node, the pods' log directories and the namespace with all it holds.
node_down() {
  node_load || return 0
  local d; d=$(node_dir)
  stop_component kube-proxy && stopped+=(kube-proxy)
  stop_component kubelet && stopped+=(kubelet)
  if pid_of containerd >/dev/null; then
    local task
    for task in $(ctr_ tasks ls -q 2>/dev/null); do
      ctr_ tasks kill -a -s SIGKILL "$task" >/dev/null 2>&1 || true
    done
    for _ in $(seq 1 50); do
      ctr_ tasks ls 2>/dev/null | awk 'NR > 1 && $3 != "STOPPED" { found = 1 } END { exit !found }' || break
      sleep 0.1
    done
    for task in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$task" >/dev/null 2>&1 || true; done
  fi
  stop_component containerd && stopped+=(containerd)
  # Shims outlive containerd by design; ours name our socket.
  pkill -KILL -f -- "containerd-shim-runc-v2 .*-address $d/containerd.sock" 2>/dev/null || true
  # Container processes a killed shim left behind: runc knows them by its root.
  if [ -d "$d/runc" ]; then
    local id
    for id in $(runc --root "$d/runc" list -q 2>/dev/null); do
      runc --root "$d/runc" kill "$id" KILL >/dev/null 2>&1 || true
      runc --root "$d/runc" delete -f "$id" >/dev/null 2>&1 || true
    done
  fi
  # Deepest first: volumes, rootfs bind mounts, the pods' network namespaces.
  # (No mount under $d, after an interrupted up, is no error: grep's status must not end down.)
  { findmnt -rn -o TARGET | grep -F "$d/" || true; } | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  # The kubelet writes container logs to the machine's /var/log/pods, one directory per pod UID.
  if [ -d "$d/kubelet/pods" ]; then
    local pod uid
    for pod in "$d/kubelet/pods"/*/; do
      [ -d "$pod" ] || continue
      uid=$(basename "$pod")
      rm -rf /var/log/pods/*_"$uid"
      find /var/log/containers -maxdepth 1 -type l -lname "/var/log/pods/*_$uid/*" -delete 2>/dev/null || true
    done
  fi
  ip route del "$POD_CIDR" via "$NODE_IP" 2>/dev/null || true
  ip link del "$HOST_IF" 2>/dev/null || true
  ip netns del "$NODE_NETNS" 2>/dev/null || true
  rm -f "$(node_env)"
}
