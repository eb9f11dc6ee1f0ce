# Shared by deploy/local/{up,down,status}. Sourced, not run.
# shellcheck shell=bash

K8S_CACHE=${BANLIEUE_K8S_CACHE:-/var/cache/banlieue/k8s-1.20.2}
DEFAULT_STATE_DIR=${BANLIEUE_LOCAL_STATE:-/tmp/banlieue-local-$(id -u)}
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler)
# Started only when up is given --node-agent (or BANLIEUE_NODE_AGENT): `banlieue devnode`.
NODE_AGENT_COMPONENT=banlieue-devnode
NODE_NAME=banlieue-devnode

parse_state_dir() {  # parse_state_dir "$@" -> sets STATE
  STATE=$DEFAULT_STATE_DIR
  NODE_AGENT=${BANLIEUE_NODE_AGENT:-}
  while [ $# -gt 0 ]; do
    case "$1" in
      --node-agent) NODE_AGENT=${2:?--node-agent needs the banlieue binary}; shift 2 ;;
      --node-agent=*) NODE_AGENT=${1#*=}; shift ;;
      --state-dir) STATE=${2:?--state-dir needs a directory}; shift 2 ;;
      --state-dir=*) STATE=${1#*=}; shift ;;
      -h|--help) usage; exit 0 ;;
      *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
  done
  mkdir -p "$STATE"
  STATE=$(cd "$STATE" && pwd)
}

pid_of() {  # pid_of <component>: prints the pid if that process is alive and is ours
  local file="$STATE/run/$1.pid" pid
  [ -f "$file" ] || return 1
  pid=$(cat "$file")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  # The pid must still be the process we started (its command line names our state dir).
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$STATE" || return 1
  echo "$pid"
}

api_port() { cat "$STATE/run/apiserver.port" 2>/dev/null; }

api_get() {  # api_get <path>: GET as the admin identity
  curl -s --max-time 5 --cacert "$STATE/pki/ca.crt" --cert "$STATE/pki/admin.crt" \
    --key "$STATE/pki/admin.key" "https://127.0.0.1:$(api_port)$1" 2>/dev/null
}

readyz() {  # prints the apiserver's /readyz answer, or nothing
  local port; port=$(api_port) || return 1
  [ -n "$port" ] || return 1
  curl -s --max-time 2 --cacert "$STATE/pki/ca.crt" --cert "$STATE/pki/admin.crt" \
    --key "$STATE/pki/admin.key" "https://127.0.0.1:$port/readyz" 2>/dev/null
}
