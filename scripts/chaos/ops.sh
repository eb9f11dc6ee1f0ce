# The operations of scripts/chaos.sh, its model of what should exist, and the final inventory.
# Sourced, not run.
# shellcheck shell=bash disable=SC2034,SC2154  # globals of scripts/chaos.sh and its other parts

declare -A vm_provider=() vm_power=() vm_memory=()
next_vm=1
run_label=chaos.banlieue.io/run
leaked_count=0 duplicated_count=0 stuck_count=0
leaked_names="" stuck_names="" duplicated_names="" stale_names="" stale_count=0
# Per backend (libvirt, vsphere): leaked and duplicated machines, one a line, and how many
# machines of the run each held before and after the clean-up.
declare -A backend_leaked=() backend_duplicated=() backend_machines_before=() backend_machines_after=()
vcsim_own=""  # the simulator's own VMs (no banlieue guestinfo), listed before the cycles

# live_vms: the VMs the model holds, sorted, so a draw picks the same VM on every run.
live_vms() { printf '%s\n' "${!vm_provider[@]}" | sed '/^$/d' | sort -V; }

# prepare: the run's VMClass, the Providers' manifests (to recreate them after a deletion), and
# no VM but its own: the walkthrough VM and a previous run's leftovers go first. vcsim's own VMs
# (its model's DC0_*, one of them the template) are listed: any other VM without banlieue's
# guestinfo is leaked.
prepare() {
  local p
  log "removing the walkthrough VM and any earlier chaos VMs"
  kr delete bvm db-prod-01 -n "$ns" --wait=false >/dev/null
  kr delete bvm -n "$ns" -l "$run_label" --wait=false >/dev/null
  wait_until "no VM left" no_vms_left || fail "VMs of an earlier run do not go away"
  kr apply -f - >/dev/null <<EOF
apiVersion: banlieue.io/v1alpha1
kind: VMClass
metadata: { name: chaos-small }
spec:
  hardware:
    cpus: 1
    memoryMiB: 256
    disks: [ { name: root, sizeGiB: 2, storageClass: gold } ]
  network:
    interfaces: [ { name: eth0, networkClass: prod } ]
EOF
  for p in "${providers[@]}"; do
    wait_until "Provider $p Ready" provider_ready "$p" || fail "Provider $p is not Ready"
    k get provider "$p" -n "$ns" -o json |
      jq '{apiVersion, kind, spec, metadata: (.metadata | {name, namespace, labels, annotations})}' \
        >"$chaos_dir/provider-$p.json"
  done
  vcsim_own=$(vcsim_vms | jq -r 'select(.hostname == "") | .name') ||
    fail "vcsim does not answer at $(cat "$vcsim_dir/url" 2>/dev/null)"
  max_converge_ms=0  # the set-up's waits are not operations of the run
}

no_vms_left() {
  local n
  n=$(k get bvm,libvirtmachine,vspheremachine -n "$ns" -o name 2>/dev/null | wc -l) || return 1
  last_seen="$n VMs, LibvirtMachines and VSphereMachines remain"
  [ "$n" -eq 0 ] && k get bvm -n "$ns" >/dev/null 2>&1
}

provider_ready() {
  local json
  json=$(k get provider "$1" -n "$ns" -o json 2>/dev/null) || { last_seen="no Provider $1"; return 1; }
  last_seen=$(jq -c '[(.status.conditions // [])[] | "\(.type)=\(.status) \(.reason)"]' <<<"$json")
  jq -e 'any((.status.conditions // [])[]; .type == "Ready" and .status == "True")' <<<"$json" >/dev/null
}

# vms_settled_on <provider>: every VM the model places there is settled.
vms_settled_on() {
  local vm
  for vm in $(live_vms); do
    [ "${vm_provider[$vm]}" = "$1" ] || continue
    vm_settled "$vm" "$1" "${vm_power[$vm]}" || { last_seen="$vm: $last_seen"; return 1; }
  done
}

# run_cycle <n>: draws the operation, its VM, its Provider and its fault, runs the operation, and
# waits until its expected state holds. A fault whose second did not come before that is
# injected then, and the expected state must hold again afterwards. With --plan it only draws
# and keeps the model (which depends on the draws alone), and prints the cycle.
run_cycle() {
  current_cycle=$1
  local r_op=$((RANDOM % 100)) r_vm=$RANDOM r_p=$((RANDOM % ${#providers[@]})) r_to=$((RANDOM % 2))
  local vms n op vm
  plan_fault
  mapfile -t vms < <(live_vms)
  n=${#vms[@]}
  if ((n == 0)); then op=create
  elif ((r_op < 25)); then if ((n < max_vms)); then op=create; else op=delete; fi
  elif ((r_op < 40)); then op=resize
  elif ((r_op < 58)); then op=power
  elif ((r_op < 76)); then op=swap
  elif ((r_op < 92)); then op=delete
  else op="provider-delete"; fi
  vm=${vms[$((r_vm % (n > 0 ? n : 1)))]:-}
  # The operation's Provider: its VM's (a Provider deletion deletes one that has VMs), or for a
  # create the drawn one. A swap goes to one of the other two, drawn.
  local provider=${providers[$r_p]} to="" p others=()
  [ -z "$vm" ] || provider=${vm_provider[$vm]}
  for p in "${providers[@]}"; do [ "$p" = "$provider" ] || others+=("$p"); done
  [ "$op" != swap ] || to=${others[$r_to]}
  # A provider kill hits that Provider's pod.
  fault_target=$provider
  op_counts["$op"]=$((${op_counts["$op"]:-0} + 1))
  local on=${provider_backend[$provider]}
  [ "$op" != swap ] || on="$on->${provider_backend[$to]}"
  op_backend_counts["$op $on"]=$((${op_backend_counts["$op $on"]:-0} + 1))
  local fault=${pending_fault:-none}
  [ "$fault" != kill-provider ] || fault="kill-provider $fault_target"
  [ "$fault" != apiserver-pause ] || fault="apiserver-pause ${pause_seconds}s"
  [ "$op" != create ] || vm=chaos-$next_vm  # the name model_create gives it
  log "cycle $1/$cycles: $op $vm on $provider${to:+ to $to} (fault: $fault at ${fault_at}s)"
  if [ "$plan_only" -eq 1 ]; then
    jq -cn --argjson c "$1" --arg op "$op" --arg vm "$vm" --arg p "$provider" --arg to "$to" \
      --arg f "${pending_fault:-none}" --argjson at "$fault_at" \
      '{cycle: $c, op: $op, vm: $vm, provider: $p, to: (if $to == "" then null else $to end),
        fault: $f, fault_at: $at}' >>"$chaos_dir/plan.jsonl"
    model_"${op//-/_}" "$vm" "$provider" "$to"
    pending_fault=""
    return 0
  fi
  expect=()
  op_started_ms=$(now_ms)
  "op_${op//-/_}" "$vm" "$provider" "$to"
  [ "$failed_waits" -eq 0 ] || return 0
  wait_until "$expect_what" "${expect[@]}" || true
  if [ -n "$pending_fault" ]; then
    fault_at=0
    fault_due 0
    wait_until "$expect_what (after the fault)" "${expect[@]}" || true
  fi
}

env_of() { echo "${provider_env[$1]}"; }

# The model's part of each operation: what should exist afterwards. It depends on the draws
# alone, so --plan can print a seed's cycles without a cluster.
model_create() {
  created=chaos-$next_vm
  next_vm=$((next_vm + 1))
  vm_provider[$created]=$2 vm_power[$created]=PoweredOn vm_memory[$created]=256
}
# A resize grows memory by 64 MiB (providers refuse shrinking).
model_resize() { vm_memory[$1]=$((vm_memory[$1] + 64)); }
model_power() {
  local want=PoweredOff
  [ "${vm_power[$1]}" = PoweredOff ] && want=PoweredOn
  vm_power[$1]=$want
}
model_swap() { vm_provider[$1]=$3; }
model_delete() { unset "vm_provider[$1]" "vm_power[$1]" "vm_memory[$1]"; }
model_provider_delete() { :; }

op_create() {
  model_create "$@"
  local name=$created provider=$2
  kr create -f - >/dev/null <<EOF
apiVersion: banlieue.io/v1alpha1
kind: VirtualMachine
metadata: { name: $name, namespace: $ns, labels: { $run_label: "true" } }
spec:
  classRef: { name: chaos-small }
  imageRef: { name: ubuntu-22-04 }
  placement: { providerSelector: { matchLabels: { dc: dc1, env: $(env_of "$provider") } } }
EOF
  expect_what="create $name on $provider"
  expect=(vm_settled "$name" "$provider" PoweredOn)
}

op_resize() {
  local vm=$1
  model_resize "$vm"
  kr patch bvm "$vm" -n "$ns" --type merge \
    -p "{\"spec\":{\"hardwareOverride\":{\"memoryMiB\":${vm_memory[$vm]}}}}" >/dev/null
  expect_what="resize $vm to ${vm_memory[$vm]} MiB"
  expect=(vm_settled "$vm" "${vm_provider[$vm]}" "${vm_power[$vm]}")
}

# Power off or on. On libvirt the guest is firmware without an OS that would honour an ACPI
# shutdown: its LibvirtMachine gets a 5 s graceful-shutdown timeout first (the default waits
# 120 s). vSphere powers off with PowerOffVM_Task, at once.
op_power() {
  local vm=$1 want
  model_power "$vm"
  want=${vm_power[$vm]}
  if [ "$want" = PoweredOff ] && [ "${provider_backend[${vm_provider[$vm]}]}" = libvirt ]; then
    kr annotate libvirtmachine "$vm" -n "$ns" --overwrite \
      libvirt.banlieue.io/shutdown-timeout-seconds=5 >/dev/null || true
  fi
  kr patch bvm "$vm" -n "$ns" --type merge -p "{\"spec\":{\"desiredPowerState\":\"$want\"}}" >/dev/null
  expect_what="power $vm $want"
  expect=(vm_settled "$vm" "${vm_provider[$vm]}" "$want")
}

# swap <vm> <from> <to>: only the placement changes; the VM moves to the other Provider (ADR
# 0010), between the two libvirt hosts or between libvirt and vSphere.
op_swap() {
  local vm=$1 to=$3
  model_swap "$@"
  kr patch bvm "$vm" -n "$ns" --type merge \
    -p "{\"spec\":{\"placement\":{\"providerSelector\":{\"matchLabels\":{\"dc\":\"dc1\",\"env\":\"$(env_of "$to")\"}}}}}" >/dev/null
  expect_what="swap $vm from $2 to $to"
  expect=(vm_settled "$vm" "$to" "${vm_power[$vm]}")
}

op_delete() {
  local vm=$1
  model_delete "$vm"
  kr delete bvm "$vm" -n "$ns" --wait=false >/dev/null
  expect_what="delete $vm"
  expect=(vm_gone "$vm")
}

# provider_delete <_> <provider>: ADR 0024. The Provider goes once its machines (LibvirtMachines
# or VSphereMachines) and their backend VMs are gone; its VMs (whose selectors match no other
# Provider) wait as NoProviderMatched. Then the Provider is recreated from its saved manifest
# and its VMs must come back Ready there.
op_provider_delete() {
  local p=$2 vm on=() kind backend=${provider_backend[$2]}
  kind=${machine_kind[$backend]}
  for vm in $(live_vms); do [ "${vm_provider[$vm]}" = "$p" ] && on+=("$vm"); done
  log "  deleting Provider $p with ${#on[@]} VMs: ${on[*]:-}"
  kr delete provider "$p" -n "$ns" --wait=false >/dev/null
  if ! wait_until "Provider $p deleted" gone provider "$p"; then
    record anomalies "$(jq -cn --arg p "$p" --arg s "$(provider_deleting "$p")" \
      '{what: "Provider deletion did not finish", provider: $p, deleting: $s}')"
    return 0
  fi
  for vm in "${on[@]}"; do
    wait_until "$kind $vm gone with its Provider" gone "$kind" "$vm" || true
    if backend_machine_exists "$backend" "$vm"; then
      log "  the $backend machine of $vm outlived Provider $p"
      record anomalies "$(jq -cn --arg v "$vm" --arg p "$p" --arg b "$backend" \
        '{what: "backend machine outlived the deletion of its Provider", vm: $v, backend: $b, provider: $p}')"
    fi
  done
  kr create -f "$chaos_dir/provider-$p.json" >/dev/null
  wait_until "Provider $p recreated and Ready" provider_ready "$p" || true
  expect_what="VMs back on $p: ${on[*]:-none}"
  expect=(vms_settled_on "$p")
}

# provider_deleting <provider>: its Deleting condition's message, and what its machines say.
provider_deleting() {
  local kind=${machine_kind[${provider_backend[$1]}]}
  k get provider "$1" -n "$ns" -o json 2>/dev/null |
    jq -r '(.status.conditions // [])[] | select(.type == "Deleting") | .message' || true
  k get "$kind" -n "$ns" -l "banlieue.io/provider=$1" -o json 2>/dev/null |
    jq -r '.items[] | "\(.metadata.name): " + ([(.status.conditions // [])[]
      | select(.type == "Ready") | .message] | join(""))' || true
}

# finish: the inventory with everything settled, then delete every VM of the run, wait, and
# take the inventory again.
finish() {
  current_cycle=end
  local vm stuck b backend
  log "inventory with the run's VMs in place"
  inventory before
  for vm in $(live_vms); do
    backend=${provider_backend[${vm_provider[$vm]}]}
    if ! backend_machine_exists "$backend" "$vm"; then
      log "  $vm has no $backend machine: $(vm_and_machine "$vm")"
      record anomalies "$(jq -cn --arg v "$vm" --arg b "$backend" --arg s "$(vm_and_machine "$vm")" \
        --arg inv "$(backend_list "$backend")" \
        '{what: "VM with no backend machine", vm: $v, backend: $b, objects: $s, backend_inventory: $inv}')"
    fi
  done
  log "deleting every VM of the run"
  kr delete bvm -n "$ns" -l "$run_label" --wait=false >/dev/null
  wait_until "every VM, LibvirtMachine and VSphereMachine gone" no_vms_left || true
  kr delete vmclass chaos-small --wait=false >/dev/null
  for p in "${providers[@]}"; do
    wait_until "Provider $p Ready at the end" provider_ready "$p" || true
  done
  log "inventory after the clean-up"
  inventory after
  # A duplicate counts once, seen before the clean-up (after it, no machine should be left); a
  # leak counts once, seen before or after.
  leaked_names="" duplicated_names=""
  for b in "${backends[@]}"; do
    backend_leaked[$b]=$(sed '/^$/d' <<<"${backend_leaked[$b]:-}" | sort -u)
    backend_duplicated[$b]=$(sed '/^$/d' <<<"${backend_duplicated[$b]:-}" | sort -u)
    # Each line as "<backend>: <line>".
    [ -z "${backend_leaked[$b]}" ] ||
      leaked_names+=$'\n'"$b: ${backend_leaked[$b]//$'\n'/$'\n'$b: }"
    [ -z "${backend_duplicated[$b]}" ] ||
      duplicated_names+=$'\n'"$b: ${backend_duplicated[$b]//$'\n'/$'\n'$b: }"
  done
  leaked_names=$(sed '/^$/d' <<<"$leaked_names")
  duplicated_names=$(sed '/^$/d' <<<"$duplicated_names")
  leaked_count=$(sed '/^$/d' <<<"$leaked_names" | wc -l)
  duplicated_count=$(sed '/^$/d' <<<"$duplicated_names" | wc -l)
  stuck=$(k get bvm,libvirtmachine,vspheremachine,provider -A -o json |
    jq -r '.items[] | select(.metadata.deletionTimestamp) | "\(.kind) \(.metadata.namespace)/\(.metadata.name)"')
  stuck_names=$stuck
  stuck_count=$(sed '/^$/d' <<<"$stuck" | wc -l)
  stale_workloads
  [ -z "$leaked_names" ] || log "  leaked: $(tr '\n' ' ' <<<"$leaked_names")"
  [ -z "$duplicated_names" ] || log "  duplicated: $(tr '\n' ' ' <<<"$duplicated_names")"
  [ -z "$stuck" ] || log "  stuck: $stuck"
}

# vm_and_machine <vm>: what the VM's status and its machine objects say, on one line.
vm_and_machine() {
  k get bvm,libvirtmachine,vspheremachine -n "$ns" --field-selector "metadata.name=$1" -o json 2>&1 |
    jq -c '[.items[] | {kind, uid: .metadata.uid, deleting: .metadata.deletionTimestamp,
      provider: (.status.scheduled.providerName // .spec.providerRef.name),
      providerID: .spec.providerID, infrastructureRef: .status.infrastructureRef.kind,
      ready: ((.status.conditions // [])[] | select(.type == "Ready") | "\(.status) \(.reason): \(.message)")}]' 2>&1 |
    head -c 2000
}

# backend_list <backend>: the backend's own inventory on one line.
backend_list() {
  case "$1" in
    libvirt) domains | tr '\n' ' ' ;;
    vsphere) vcsim_vms | jq -c -s 'map(select(.hostname != "") | "\(.name) \(.instanceUuid) \(.powerState)")' ;;
  esac
}

# inventory <before|after>: each backend's own inventory against the objects.
inventory() {
  libvirt_inventory "$1"
  vsphere_inventory "$1"
}

# libvirt_inventory <before|after>: each domain names its LibvirtMachine in its metadata
# (namespace, name, uid; see plugins/libvirt/src/domain_xml.cc). A domain is leaked when that
# LibvirtMachine (that uid, not just that name: an older incarnation of a swapped VM counts) is
# gone, or when it names none. Two domains naming one VM are duplicated.
libvirt_inventory() {
  local d owner uids owners="" n=0
  uids=$(k get libvirtmachine -A -o jsonpath='{range .items[*]}{.metadata.uid}{"\n"}{end}') ||
    fail "no LibvirtMachine list for the inventory"
  for d in $(domains); do
    n=$((n + 1))
    owner=$(domain_owner "$d")
    owners+=$'\n'${owner% *}
    if [ -z "$owner" ] || ! grep -qx "${owner##* }" <<<"$uids"; then
      backend_leaked[libvirt]+=$'\n'"$d (${owner:-no banlieue metadata})"
    fi
  done
  [ "$1" = after ] || backend_duplicated[libvirt]+=$'\n'$(sed '/^$/d' <<<"$owners" | sort | uniq -d)
  if [ "$1" = before ]; then backend_machines_before[libvirt]=$n; else backend_machines_after[libvirt]=$n; fi
}

# domain_owner <domain>: "<namespace>/<name> <uid>" from the domain's banlieue metadata.
domain_owner() {
  virsh -q -c "$libvirt_uri" metadata "$1" https://banlieue.io/libvirt/1 2>/dev/null |
    sed -n 's|.* namespace="\([^"]*\)".* name="\([^"]*\)".* uid="\([^"]*\)".*|\1/\2 \3|p'
}

# vsphere_inventory <before|after>: the plugin clones each VSphereMachine into a VM named after
# it, with the VSphereMachine's uid as its instance UUID and its name in
# guestinfo.network.hostname (plugins/vsphere/src/machine.cc). A VM is leaked when no
# VSphereMachine has its instance UUID (an older incarnation counts), or when it is neither
# banlieue's nor one of the simulator's own. Two VMs for one name are duplicated.
vsphere_inventory() {
  local uids vms name uuid host owners="" n=0
  uids=$(k get vspheremachine -A -o jsonpath='{range .items[*]}{.metadata.uid}{"\n"}{end}') ||
    fail "no VSphereMachine list for the inventory"
  vms=$(vcsim_vms) || fail "vcsim does not answer for the inventory"
  while IFS='|' read -r name uuid host; do
    [ -n "$name" ] || continue
    if [ -z "$host" ]; then
      grep -qxF "$name" <<<"$vcsim_own" && continue
      n=$((n + 1))
      backend_leaked[vsphere]+=$'\n'"$name (no banlieue guestinfo)"
      continue
    fi
    n=$((n + 1))
    owners+=$'\n'$host
    if ! grep -qix "$uuid" <<<"$uids"; then
      backend_leaked[vsphere]+=$'\n'"$name (instance uuid $uuid: no such VSphereMachine)"
    fi
  done < <(jq -r '"\(.name)|\(.instanceUuid)|\(.hostname)"' <<<"$vms")
  [ "$1" = after ] || backend_duplicated[vsphere]+=$'\n'$(sed '/^$/d' <<<"$owners" | sort | uniq -d)
  if [ "$1" = before ]; then backend_machines_before[vsphere]=$n; else backend_machines_after[vsphere]=$n; fi
}

# stale_workloads: provider ReplicaSets and pods whose owner is gone. A Provider's workload
# must go with it (ADR 0024); one left running competes for the recreated Provider's Lease.
stale_workloads() {
  local owners
  owners=$(k get deploy,rs -A -o jsonpath='{range .items[*]}{.metadata.uid}{"\n"}{end}')
  stale_names=$(k get rs,pods -A -l banlieue.io/provider -o json | jq -r --arg owners "$owners" '
    ($owners | split("\n")) as $uids | .items[]
    | select(any(.metadata.ownerReferences[]?; .controller and (.uid | IN($uids[]) | not)))
    | "\(.kind) \(.metadata.namespace)/\(.metadata.name)"')
  stale_count=$(sed '/^$/d' <<<"$stale_names" | wc -l)
  [ -z "$stale_names" ] || log "  workload of a deleted owner still there: $(tr '\n' ' ' <<<"$stale_names")"
}
