# The operations of scripts/chaos.sh, its model of what should exist, and the final inventory.
# Sourced, not run.
# shellcheck shell=bash disable=SC2034,SC2154  # globals of scripts/chaos.sh and its other parts

declare -A vm_provider=() vm_power=() vm_memory=()
next_vm=1
run_label=chaos.banlieue.io/run
leaked_count=0 duplicated_count=0 stuck_count=0
leaked_names="" stuck_names="" duplicated_names="" stale_names="" stale_count=0

# live_vms: the VMs the model holds, sorted, so a draw picks the same VM on every run.
live_vms() { printf '%s\n' "${!vm_provider[@]}" | sed '/^$/d' | sort -V; }

# prepare: the run's VMClass, the Providers' manifests (to recreate them after a deletion), and
# no VM but its own: the walkthrough VM and a previous run's leftovers go first.
prepare() {
  local p
  log "removing the walkthrough VM and any earlier chaos VMs"
  kr delete vm db-prod-01 -n "$ns" --wait=false >/dev/null
  kr delete vm -n "$ns" -l "$run_label" --wait=false >/dev/null
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
  max_converge_ms=0  # the set-up's waits are not operations of the run
}

no_vms_left() {
  local n
  n=$(k get vm,libvirtmachine -n "$ns" -o name 2>/dev/null | wc -l) || return 1
  last_seen="$n VMs and LibvirtMachines remain"
  [ "$n" -eq 0 ] && k get vm -n "$ns" >/dev/null 2>&1
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

# run_cycle <n>: draws the operation, its VM and its fault, runs the operation, and waits until
# its expected state holds. A fault whose second did not come before that is injected then,
# and the expected state must hold again afterwards.
run_cycle() {
  current_cycle=$1
  local r_op=$((RANDOM % 100)) r_vm=$RANDOM r_p=$((RANDOM % 2)) vms n op vm
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
  op_counts["$op"]=$((${op_counts["$op"]:-0} + 1))
  log "cycle $1/$cycles: $op ${vm:-} (fault: ${pending_fault:-none} at ${fault_at}s)"
  expect=()
  # A provider kill hits the Provider the operation's VM is on, when it has one.
  [ -z "$vm" ] || fault_target=${vm_provider[$vm]}
  op_started_ms=$(now_ms)
  # A Provider deletion deletes the Provider of the cycle's VM: one that has VMs.
  local provider=${providers[$r_p]}
  [ -z "$vm" ] || provider=${vm_provider[$vm]}
  "op_${op//-/_}" "$vm" "$provider"
  [ "$failed_waits" -eq 0 ] || return 0
  wait_until "$expect_what" "${expect[@]}" || true
  if [ -n "$pending_fault" ]; then
    fault_at=0
    fault_due 0
    wait_until "$expect_what (after the fault)" "${expect[@]}" || true
  fi
}

env_of() { echo "${provider_env[$1]}"; }

op_create() {
  local name=chaos-$next_vm provider=$2
  next_vm=$((next_vm + 1))
  vm_provider[$name]=$provider vm_power[$name]=PoweredOn vm_memory[$name]=256
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

# A resize grows memory by 64 MiB (providers refuse shrinking).
op_resize() {
  local vm=$1
  vm_memory[$vm]=$((vm_memory[$vm] + 64))
  kr patch vm "$vm" -n "$ns" --type merge \
    -p "{\"spec\":{\"hardwareOverride\":{\"memoryMiB\":${vm_memory[$vm]}}}}" >/dev/null
  expect_what="resize $vm to ${vm_memory[$vm]} MiB"
  expect=(vm_settled "$vm" "${vm_provider[$vm]}" "${vm_power[$vm]}")
}

# Power off or on. The guest is firmware without an OS that would honour an ACPI shutdown: its
# LibvirtMachine gets a 5 s graceful-shutdown timeout first (the default waits 120 s).
op_power() {
  local vm=$1 want=PoweredOff
  [ "${vm_power[$vm]}" = PoweredOff ] && want=PoweredOn
  vm_power[$vm]=$want
  if [ "$want" = PoweredOff ]; then
    kr annotate libvirtmachine "$vm" -n "$ns" --overwrite \
      libvirt.banlieue.io/shutdown-timeout-seconds=5 >/dev/null || true
  fi
  kr patch vm "$vm" -n "$ns" --type merge -p "{\"spec\":{\"desiredPowerState\":\"$want\"}}" >/dev/null
  expect_what="power $vm $want"
  expect=(vm_settled "$vm" "${vm_provider[$vm]}" "$want")
}

# Swap: only the placement changes; the VM moves to the other Provider (ADR 0010).
op_swap() {
  local vm=$1 to=libvirt-host1
  [ "${vm_provider[$vm]}" = libvirt-host1 ] && to=libvirt-host2
  vm_provider[$vm]=$to
  kr patch vm "$vm" -n "$ns" --type merge \
    -p "{\"spec\":{\"placement\":{\"providerSelector\":{\"matchLabels\":{\"dc\":\"dc1\",\"env\":\"$(env_of "$to")\"}}}}}" >/dev/null
  expect_what="swap $vm to $to"
  expect=(vm_settled "$vm" "$to" "${vm_power[$vm]}")
}

op_delete() {
  local vm=$1
  unset "vm_provider[$vm]" "vm_power[$vm]" "vm_memory[$vm]"
  kr delete vm "$vm" -n "$ns" --wait=false >/dev/null
  expect_what="delete $vm"
  expect=(vm_gone "$vm")
}

# provider_delete <_> <provider>: ADR 0024. The Provider goes once its LibvirtMachines and their
# domains are gone; its VMs (whose selectors match no other Provider) wait as NoProviderMatched.
# Then the Provider is recreated from its saved manifest and its VMs must come back Ready there.
op_provider_delete() {
  local p=$2 vm on=()
  for vm in $(live_vms); do [ "${vm_provider[$vm]}" = "$p" ] && on+=("$vm"); done
  log "  deleting Provider $p with ${#on[@]} VMs: ${on[*]:-}"
  kr delete provider "$p" -n "$ns" --wait=false >/dev/null
  if ! wait_until "Provider $p deleted" gone provider "$p"; then
    record anomalies "$(jq -cn --arg p "$p" --arg s "$(provider_deleting "$p")" \
      '{what: "Provider deletion did not finish", provider: $p, deleting: $s}')"
    return 0
  fi
  for vm in "${on[@]}"; do
    wait_until "LibvirtMachine $vm gone with its Provider" gone libvirtmachine "$vm" || true
    if domains | grep -qx "$ns-$vm"; then
      log "  domain $ns-$vm outlived Provider $p"
      record anomalies "$(jq -cn --arg d "$ns-$vm" --arg p "$p" \
        '{what: "domain outlived the deletion of its Provider", domain: $d, provider: $p}')"
    fi
  done
  kr create -f "$chaos_dir/provider-$p.json" >/dev/null
  wait_until "Provider $p recreated and Ready" provider_ready "$p" || true
  expect_what="VMs back on $p: ${on[*]:-none}"
  expect=(vms_settled_on "$p")
}

# provider_deleting <provider>: its Deleting condition's message, and what its objects say.
provider_deleting() {
  k get provider "$1" -n "$ns" -o json 2>/dev/null |
    jq -r '(.status.conditions // [])[] | select(.type == "Deleting") | .message' || true
  k get libvirtmachine -n "$ns" -l "banlieue.io/provider=$1" -o json 2>/dev/null |
    jq -r '.items[] | "\(.metadata.name): " + ([(.status.conditions // [])[]
      | select(.type == "Ready") | .message] | join(""))' || true
}

# finish: the inventory with everything settled, then delete every VM of the run, wait, and
# take the inventory again.
finish() {
  current_cycle=end
  local d vm stuck
  log "inventory with the run's VMs in place"
  inventory
  duplicated_names=$(sed '/^$/d' <<<"$duplicated_names" | sort -u)
  duplicated_count=$(sed '/^$/d' <<<"$duplicated_names" | wc -l)
  for vm in $(live_vms); do
    if ! domains | grep -qx "$ns-$vm"; then
      record anomalies "$(jq -cn --arg v "$vm" '{what: "VM with no domain", vm: $v}')"
    fi
  done
  log "deleting every VM of the run"
  kr delete vm -n "$ns" -l "$run_label" --wait=false >/dev/null
  wait_until "every VM and LibvirtMachine gone" no_vms_left || true
  kr delete vmclass chaos-small --wait=false >/dev/null
  for p in "${providers[@]}"; do
    wait_until "Provider $p Ready at the end" provider_ready "$p" || true
  done
  log "inventory after the clean-up"
  inventory
  leaked_names=$(sort -u <<<"$leaked_names" | sed '/^$/d')
  leaked_count=$(sed '/^$/d' <<<"$leaked_names" | wc -l)
  stuck=$(k get vm,libvirtmachine,provider -A -o json |
    jq -r '.items[] | select(.metadata.deletionTimestamp) | "\(.kind) \(.metadata.namespace)/\(.metadata.name)"')
  stuck_names=$stuck
  stuck_count=$(sed '/^$/d' <<<"$stuck" | wc -l)
  stale_workloads
  [ -z "$leaked_names" ] || log "  leaked domains: $(tr '\n' ' ' <<<"$leaked_names")"
  [ -z "$stuck" ] || log "  stuck: $stuck"
}

# inventory: each domain names its LibvirtMachine in its metadata (namespace, name, uid; see
# plugins/libvirt/src/domain_xml.cc). A domain is leaked when that LibvirtMachine (that uid, not
# just that name: an older incarnation of a swapped VM counts) is gone, or when it names none.
# Two domains naming one VM are duplicated.
inventory() {
  local d owner uids owners=""
  uids=$(k get libvirtmachine -A -o jsonpath='{range .items[*]}{.metadata.uid}{"\n"}{end}') ||
    fail "no LibvirtMachine list for the inventory"
  for d in $(domains); do
    owner=$(domain_owner "$d")
    owners+=$'\n'${owner% *}
    if [ -z "$owner" ] || ! grep -qx "${owner##* }" <<<"$uids"; then
      leaked_names+=$'\n'"$d (${owner:-no banlieue metadata})"
    fi
  done
  duplicated_names+=$'\n'$(sed '/^$/d' <<<"$owners" | sort | uniq -d)
}

# domain_owner <domain>: "<namespace>/<name> <uid>" from the domain's banlieue metadata.
domain_owner() {
  virsh -q -c "$libvirt_uri" metadata "$1" https://banlieue.io/libvirt/1 2>/dev/null |
    sed -n 's|.* namespace="\([^"]*\)".* name="\([^"]*\)".* uid="\([^"]*\)".*|\1/\2 \3|p'
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
