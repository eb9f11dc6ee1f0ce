# Shared by deploy/local/{up,down,status}. Sourced, not run.
# shellcheck shell=bash

K8S_CACHE=${BANLIEUE_K8S_CACHE:-/var/cache/banlieue/k8s-1.20.2}
DEFAULT_STATE_DIR=${BANLIEUE_LOCAL_STATE:-/tmp/banlieue-local-$(id -u)}
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler)

parse_state_dir() {  # parse_state_dir "$@" -> sets STATE
  STATE=$DEFAULT_STATE_DIR
  WITH_NODE=0
  IMAGE_BUILD_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/dev
  while [ $# -gt 0 ]; do
    case "$1" in
      --node) WITH_NODE=1; shift ;;
      --image-build-dir) IMAGE_BUILD_DIR=${2:?--image-build-dir needs a build directory}; shift 2 ;;
      --image-build-dir=*) IMAGE_BUILD_DIR=${1#*=}; shift ;;
      --state-dir) STATE=${2:?--state-dir needs a directory}; shift 2 ;;
      --state-dir=*) STATE=${1#*=}; shift ;;
      -h|--help) usage; exit 0 ;;
      *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
  done
  mkdir -p "$STATE"
  STATE=$(cd "$STATE" && pwd)
}

# A pid file holds "<pid> <start time>": the start time (field 22 of /proc/<pid>/stat, fixed at
# fork) tells our process from a later one that reuses its pid, and holds from the moment of
# fork - before exec, when the command line is still the shell's.
start_time_of() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
state_of() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }

start() {  # start <component> <command...>: detached, own session, logs and pid in STATE
  local name=$1; shift
  pid_of "$name" >/dev/null && return 0  # resuming: already running
  setsid "$@" >"$STATE/logs/$name.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid $(start_time_of "$pid")" >"$STATE/run/$name.pid"
}

pid_of() {  # pid_of <component>: prints the pid if that process is alive and is ours
  local file="$STATE/run/$1.pid" pid started state
  [ -f "$file" ] || return 1
  read -r pid started <"$file" || true
  [ -n "$pid" ] || return 1
  state=$(state_of "$pid")
  # Gone, or exited and not yet reaped by this shell (a zombie still answers kill -0).
  [ -n "$state" ] && [ "$state" != Z ] || return 1
  if [ -n "$started" ]; then
    [ "$(start_time_of "$pid")" = "$started" ] || return 1
  else
    # A pid file of an older up: its command line names our state dir.
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$STATE" || return 1
  fi
  echo "$pid"
}

# exit_reason <component>: sets EXIT_REASON to why a component this shell started is gone. Not
# for $(...): only this shell can wait for its child and learn its exit status.
exit_reason() {
  local pid status=unknown log="$STATE/logs/$1.log" last
  read -r pid _ <"$STATE/run/$1.pid" 2>/dev/null || true
  if [ -n "$pid" ]; then
    wait "$pid" 2>/dev/null && status=0 || status=$?
    [ "$status" -gt 128 ] && status="$status (signal $((status - 128)))"
  fi
  last=$(tail -n 5 "$log" 2>/dev/null)
  EXIT_REASON="exited with status $status; "
  if [ -n "$last" ]; then
    EXIT_REASON+="the last lines of $log:"$'\n'"$last"
  else
    EXIT_REASON+="$log is empty"
  fi
}

api_port() { cat "$STATE/run/apiserver.port" 2>/dev/null; }
# Loopback, or with a node the host side of the node's veth pair (pods must reach it).
api_address() { cat "$STATE/run/apiserver.address" 2>/dev/null || echo 127.0.0.1; }

api_get() {  # api_get <path>: GET as the admin identity
  curl -s --max-time 5 --cacert "$STATE/pki/ca.crt" --cert "$STATE/pki/admin.crt" \
    --key "$STATE/pki/admin.key" "https://$(api_address):$(api_port)$1" 2>/dev/null
}

readyz() {  # prints the apiserver's /readyz answer, or nothing
  local port; port=$(api_port) || return 1
  [ -n "$port" ] || return 1
  curl -s --max-time 2 --cacert "$STATE/pki/ca.crt" --cert "$STATE/pki/admin.crt" \
    --key "$STATE/pki/admin.key" "https://$(api_address):$port/readyz" 2>/dev/null
}
