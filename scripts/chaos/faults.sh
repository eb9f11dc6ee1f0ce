# Faults for scripts/chaos.sh: SIGKILL of a role's process, apiserver kill-and-restart, apiserver
# pauses. Sourced, not run.
# shellcheck shell=bash disable=SC2034,SC2154  # globals of scripts/chaos.sh and its other parts

pending_fault=""   # what the current cycle will inject ("" once injected or for none)
fault_at=0         # seconds into the operation
fault_target=""    # which Provider's pod, for provider kills (run_cycle sets it)
paused_pid=""      # a stopped apiserver, for the EXIT trap

# plan_fault: draws the cycle's fault and its second. Always three draws, so the sequence of the
# PRNG does not depend on what the cluster did.
plan_fault() {
  local r=$((RANDOM % 100)) at=$((RANDOM % 4))
  if ((r < 20)); then pending_fault=""
  elif ((r < 36)); then pending_fault=kill-controller
  elif ((r < 52)); then pending_fault=kill-operator
  elif ((r < 72)); then pending_fault=kill-provider
  elif ((r < 86)); then pending_fault=apiserver-restart
  else pending_fault=apiserver-pause; fi
  fault_at=$at
  pause_seconds=$((16 + RANDOM % 7))  # longer than the 15 s Lease
}

# fault_due <elapsed>: injects the pending fault once its second has come.
fault_due() {
  [ -n "$pending_fault" ] && [ "$1" -ge "$fault_at" ] || return 0
  inject "$pending_fault"
  pending_fault=""
}

inject() {
  case "$1" in
    kill-controller) kill_role controller banlieue-system banlieue-controller- || true ;;
    kill-operator) kill_role operator banlieue-system banlieue-operator- || true ;;
    kill-provider)
      # The pods the operator mints: banlieue-provider-<class>-<Provider>-<hashes>.
      if kill_role provider "$ns" "banlieue-provider-${provider_backend[$fault_target]}-$fault_target-"; then
        provider_kills["$fault_target"]=$((${provider_kills["$fault_target"]:-0} + 1))
      fi
      ;;
    apiserver-restart) restart_apiserver ;;
    apiserver-pause) pause_apiserver "$pause_seconds" ;;
  esac
}

# kill_role <role> <namespace> <pod-name-prefix>: SIGKILL of the container's main process;
# fails when there was none to kill.
# The pid comes from the node's own containerd (tasks carry host pids), matched by the
# container id the pod's status names: no pgrep that could hit another cluster's pods.
kill_role() {
  local role=$1 pods id="" pid deadline=$((SECONDS + 30))
  # A container that a previous fault killed may still be restarting: wait for it (bounded).
  while [ -z "$id" ] && [ "$SECONDS" -lt "$deadline" ]; do
    pods=$(k get pods -n "$2" -o json 2>/dev/null) || pods='{"items": []}'
    id=$(jq -r --arg p "$3" '[.items[] | select(.metadata.name | startswith($p))
      | select(.metadata.deletionTimestamp == null)
      | .status.containerStatuses[0] | select(.state.running) | .containerID][0] // ""
      | sub("^containerd://"; "")' <<<"$pods")
    [ -n "$id" ] || sleep 1
  done
  if [ -z "$id" ]; then
    log "  fault: no running $3* container for 30 s, $role not killed"
    record anomalies "$(jq -cn --arg r "$role" --arg p "$3" \
      '{what: "no running container to kill for 30 s", role: $r, pod_prefix: $p}')"
    return 1
  fi
  pid=$(ctr --address "$STATE/node/containerd.sock" -n k8s.io tasks ls 2>/dev/null |
    awk -v id="$id" '$1 == id && $3 == "RUNNING" { print $2 }')
  if [ -z "$pid" ] || ! kill -KILL "$pid" 2>/dev/null; then
    log "  fault: container ${id:0:12} has no running task, $role not killed"
    return 1
  fi
  kills["$role"]=$((kills["$role"] + 1))
  log "  fault: SIGKILL $role ($3*, pid $pid)"
}

# restart_apiserver: SIGKILL, then the same command line again through deploy/local/lib.sh's
# start (what deploy/local/up does on a resume: same port, same flags, same pid file).
restart_apiserver() {
  local pid args
  pid=$(pid_of kube-apiserver) || fail "the kube-apiserver of $STATE is not running"
  mapfile -d '' args <"/proc/$pid/cmdline"
  kill -KILL "$pid"
  for _ in $(seq 1 50); do [ "$(state_of "$pid")" = "" ] && break; sleep 0.1; done
  # In a subshell: the new apiserver is not this shell's child, so the next SIGKILL of it is
  # not reported on stderr as a job of this shell.
  (start kube-apiserver "${args[@]}")
  for _ in $(seq 1 120); do [ "$(readyz)" = ok ] && break; sleep 0.5; done
  [ "$(readyz)" = ok ] || fail "the kube-apiserver did not come back (see $STATE/logs/kube-apiserver.log)"
  apiserver_restarts=$((apiserver_restarts + 1))
  log "  fault: SIGKILL kube-apiserver (pid $pid), restarted as pid $(pid_of kube-apiserver)"
}

# pause_apiserver <seconds>: SIGSTOP, longer than a Lease, then SIGCONT. Leaders cannot renew;
# their clients' requests hang instead of being refused (ADR 0021).
pause_apiserver() {
  local pid
  pid=$(pid_of kube-apiserver) || fail "the kube-apiserver of $STATE is not running"
  paused_pid=$pid
  kill -STOP "$pid"
  log "  fault: SIGSTOP kube-apiserver for $1 s"
  sleep "$1"
  kill -CONT "$pid"
  paused_pid=""
  apiserver_pauses=$((apiserver_pauses + 1))
}

resume_apiserver() { [ -z "$paused_pid" ] || kill -CONT "$paused_pid" 2>/dev/null || true; }
