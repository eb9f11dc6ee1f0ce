# Shared by scripts/chaos.sh: logging, kubectl with retries, waiting, the tallies, the report.
# Sourced, not run.
# shellcheck shell=bash disable=SC2034,SC2154  # globals of scripts/chaos.sh and its other parts

run_started=$SECONDS
current_cycle=0
max_converge_ms=0
failed_waits=0  # operations that did not converge: the cycles stop at the first one
op_started_ms=""
declare -A kills=([controller]=0 [operator]=0 [provider]=0)
declare -A provider_kills=()  # provider kills by Provider
declare -A op_counts=()
declare -A op_backend_counts=()  # "create vsphere", "swap libvirt->vsphere", ...
apiserver_restarts=0
apiserver_pauses=0

log() { printf '[chaos %4ss c%s] %s\n' "$((SECONDS - run_started))" "$current_cycle" "$*" >&2; }
fail() { log "FATAL: $*"; exit 1; }

# Every call is bounded: a paused apiserver must not hang the run.
k() { "$kubectl" --request-timeout=10s "$@"; }

# kr <kubectl args...>: retried for up to 120 s. The operations must land even when a fault
# just took the apiserver away; only the time it takes them to converge is measured.
kr() {
  local deadline=$((SECONDS + 120)) out
  while true; do
    if out=$(k "$@" 2>&1); then
      [ -z "$out" ] || printf '%s\n' "$out"
      return 0
    fi
    # A delete of something already gone, or a create of something there: done.
    case "$out" in *NotFound* | *AlreadyExists*) return 0 ;; esac
    [ "$SECONDS" -lt "$deadline" ] || { log "kubectl $* kept failing: $out"; return 1; }
    sleep 1
  done
}

# record <file> <json object>: one line of the report's lists.
# The cycle is a number, or "end" for the clean-up's waits.
record() {
  jq -cn --arg c "$current_cycle" "$2"' + {cycle: (if $c | test("^[0-9]+$") then $c | tonumber else $c end)}' \
    >>"$chaos_dir/$1.jsonl"
}

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# wait_until <what> <check-function> [args...]: polls the check about once a second for
# op_timeout seconds, injecting the cycle's pending fault (faults.sh) when its second comes.
# Times count from op_started_ms when the operation set it (so the kubectl call that issued it
# counts), else from now. Records the time to converge (max_converge_ms) or a timeout with the
# last state seen.
wait_until() {
  local what=$1 check=$2 start=${op_started_ms:-$(now_ms)} elapsed
  shift 2
  op_started_ms=""
  while true; do
    elapsed=$(($(now_ms) - start))
    fault_due "$((elapsed / 1000))"
    if "$check" "$@"; then
      elapsed=$(($(now_ms) - start))
      [ "$elapsed" -le "$max_converge_ms" ] || max_converge_ms=$elapsed
      log "  $what: converged in $(seconds "$elapsed")s"
      return 0
    fi
    if [ "$elapsed" -ge "$((op_timeout * 1000))" ]; then
      log "  $what: NOT converged after $(seconds "$elapsed")s: $last_seen"
      record timeouts "$(jq -cn --arg w "$what" --arg s "$last_seen" --argjson t "$(seconds "$elapsed")" \
        '{what: $w, seconds: $t, last_seen: $s}')"
      [ "$elapsed" -le "$max_converge_ms" ] || max_converge_ms=$elapsed
      failed_waits=$((failed_waits + 1))
      save_pod_logs
      return 1
    fi
    sleep 1
  done
}

# save_pod_logs: every banlieue pod's log (and its previous container's, after a kill), as the
# kubelet holds them when an operation did not converge: the clean-up that follows restarts
# nothing, but the next run's --fresh removes the node's logs.
save_pod_logs() {
  local dir=$chaos_dir/pod-logs/cycle-$current_cycle pod_ns pod
  mkdir -p "$dir"
  k get pods -A --no-headers -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name 2>/dev/null |
    while read -r pod_ns pod; do
      case $pod in banlieue-*) ;; *) continue ;; esac
      k logs -n "$pod_ns" "$pod" --all-containers --timestamps >"$dir/$pod_ns.$pod.log" 2>&1 || true
      k logs -n "$pod_ns" "$pod" --all-containers --timestamps --previous \
        >"$dir/$pod_ns.$pod.previous.log" 2>/dev/null || rm -f "$dir/$pod_ns.$pod.previous.log"
    done
  log "  the pods' logs: $dir"
}

# seconds <ms>: with one decimal.
seconds() { printf '%d.%d' "$(($1 / 1000))" "$((($1 % 1000) / 100))"; }

# The checks set last_seen, so a timeout says what the object looked like.
last_seen=""

# vm_settled <vm> <provider> <power>: the controller saw the current spec, the VM is Ready on
# that Provider and its observed power state is the desired one.
vm_settled() {
  local json
  json=$(k get bvm "$1" -n "$ns" -o json 2>/dev/null) || { last_seen="no answer or no VM"; return 1; }
  last_seen=$(jq -c '{gen: .metadata.generation, observed: .status.observedGeneration,
    provider: .status.scheduled.providerName, power: .status.observedPowerState,
    ready: ((.status.conditions // [])[] | select(.type == "Ready") | "\(.status) \(.reason): \(.message)")}' \
    <<<"$json" 2>/dev/null || echo "$json" | head -c 300)
  jq -e --arg p "$2" --arg w "$3" '.metadata.generation == .status.observedGeneration
    and .status.scheduled.providerName == $p and .status.observedPowerState == $w
    and any((.status.conditions // [])[]; .type == "Ready" and .status == "True")' \
    <<<"$json" >/dev/null
}

# gone <kind> <name>: NotFound (an unanswered request is not "gone").
gone() {
  local out
  if out=$(k get "$1" "$2" -n "$ns" -o jsonpath='{.metadata.deletionTimestamp}' 2>&1); then
    last_seen="$1 $2 still there (deletionTimestamp ${out:-none})"
    return 1
  fi
  [[ $out == *NotFound* ]] && return 0
  last_seen="no answer: $out"
  return 1
}

# vm_gone <vm>: the VM and its machine on either backend are all gone.
vm_gone() { gone bvm "$1" && gone libvirtmachine "$1" && gone vspheremachine "$1"; }

# domains: libvirtd's own inventory, one domain name a line.
domains() { virsh -q -c "$libvirt_uri" list --all --name | sed '/^$/d'; }

# vcsim_vms: vcsim's own inventory, one JSON object a line (name, instanceUuid, template,
# powerState, hostname), from the project's vcsim in its -inventory mode: govmomi's client, not
# the plugin's. dev.sh keeps the URL, the CA and the password under $STATE/dev/vcsim.
vcsim_vms() {
  "$vcsim_bin" -inventory "$(cat "$vcsim_dir/url")" -cacert "$vcsim_dir/pki/cacert.pem" \
    -username banlieue@vsphere.local -password "$(cat "$vcsim_dir/password")"
}

# backend_machine_exists <backend> <vm>: the backend holds a machine for the VM: libvirt a domain
# <namespace>-<vm>, vcsim a VM named <vm> that the plugin made (guestinfo host name <vm>).
backend_machine_exists() {
  case "$1" in
    libvirt) domains | grep -qx "$ns-$2" ;;
    # Slurped: with one input a line, jq -e would answer for the last line only.
    vsphere) vcsim_vms | jq -se --arg v "$2" 'any(.[]; .name == $v and .hostname == $v)' >/dev/null ;;
  esac
}

# report <seconds>: the one JSON document on stdout.
report() {
  local kills_json ops_json
  kills_json=$(for r in "${!kills[@]}"; do echo "$r ${kills[$r]}"; done |
    jq -Rn '[inputs | split(" ") | {(.[0]): (.[1] | tonumber)}] | add')
  ops_json=$(for o in "${!op_counts[@]}"; do echo "$o ${op_counts[$o]}"; done |
    jq -Rn '[inputs | split(" ") | {(.[0]): (.[1] | tonumber)}] | add // {}')
  local by_backend_json provider_kills_json backends_json b
  by_backend_json=$(for o in "${!op_backend_counts[@]}"; do echo "$o ${op_backend_counts[$o]}"; done |
    jq -Rn '[inputs | split(" ") | {(.[0] + " " + .[1]): (.[2] | tonumber)}] | add // {}')
  provider_kills_json=$(for p in "${!provider_kills[@]}"; do echo "$p ${provider_kills[$p]}"; done |
    jq -Rn '[inputs | split(" ") | {(.[0]): (.[1] | tonumber)}] | add // {}')
  backends_json=$(for b in "${backends[@]}"; do
    jq -n --arg b "$b" --argjson before "${backend_machines_before[$b]:-0}" \
      --argjson after "${backend_machines_after[$b]:-0}" \
      --slurpfile leaked <(jq -Rn '[inputs]' <<<"${backend_leaked[$b]:-}") \
      --slurpfile dup <(jq -Rn '[inputs]' <<<"${backend_duplicated[$b]:-}") \
      --argjson ops "$by_backend_json" --argjson pk "$provider_kills_json" \
      --arg providers "$(for p in "${providers[@]}"; do
        [ "${provider_backend[$p]}" = "$b" ] && echo "$p"; done)" \
      '{($b): {
        leaked_backend_vms: ($leaked[0] | map(select(. != "")) | length),
        duplicated_backend_vms: ($dup[0] | map(select(. != "")) | length),
        leaked: ($leaked[0] | map(select(. != ""))), duplicated: ($dup[0] | map(select(. != ""))),
        backend_vms_before_cleanup: $before, backend_vms_after_cleanup: $after,
        providers: ($providers | split("\n") | map(select(. != ""))),
        provider_kills: ([($providers | split("\n"))[] | select(. != "") | $pk[.] // 0] | add // 0),
        creates: ($ops["create " + $b] // 0),
        swaps_in: ([$ops | to_entries[] | select(.key | test("^swap .*->" + $b + "$")) | .value] | add // 0),
        swaps_out: ([$ops | to_entries[] | select(.key | test("^swap " + $b + "->")) | .value] | add // 0)}}'
  done | jq -s 'add // {}')
  jq -n --argjson cycles "$cycles" --argjson seed "$seed" --argjson kills "$kills_json" \
    --argjson restarts "$apiserver_restarts" --argjson pauses "$apiserver_pauses" \
    --argjson leaked "$leaked_count" --argjson duplicated "$duplicated_count" \
    --argjson stuck "$stuck_count" --argjson converge "$(seconds "$max_converge_ms")" \
    --argjson ops "$ops_json" --argjson seconds "$1" --argjson ran "$cycles_run" \
    --argjson backends "$backends_json" --argjson provider_kills "$provider_kills_json" \
    --argjson by_backend "$by_backend_json" \
    --arg stopped "$stopped_at" \
    --slurpfile leaked_list <(jq -Rn '[inputs]' <<<"$leaked_names") \
    --slurpfile stuck_list <(jq -Rn '[inputs]' <<<"$stuck_names") \
    --slurpfile dup_list <(jq -Rn '[inputs]' <<<"$duplicated_names") \
    --slurpfile stale_list <(jq -Rn '[inputs]' <<<"$stale_names") --argjson stale "$stale_count" \
    --slurpfile timeouts <(jq -s . "$chaos_dir/timeouts.jsonl") \
    --slurpfile anomalies <(jq -s . "$chaos_dir/anomalies.jsonl") \
    '{cycles: $cycles, seed: $seed, cycles_run: $ran,
      stopped_after_timeout_in_cycle: (if $stopped == "" then null else ($stopped | tonumber) end), kills: $kills, apiserver_restarts: $restarts,
      apiserver_pauses: $pauses, leaked_backend_vms: $leaked, duplicated_backend_vms: $duplicated,
      stuck_objects: $stuck, max_converge_seconds: $converge, operations: $ops,
      operations_by_backend: $by_backend, provider_kills: $provider_kills, backends: $backends,
      leaked: ($leaked_list[0] | map(select(. != ""))),
      duplicated: ($dup_list[0] | map(select(. != ""))),
      stuck: ($stuck_list[0] | map(select(. != ""))),
      stale_workloads: $stale, stale_workload_objects: ($stale_list[0] | map(select(. != ""))),
      timeouts: $timeouts[0], anomalies: $anomalies[0], run_seconds: $seconds}'
}
