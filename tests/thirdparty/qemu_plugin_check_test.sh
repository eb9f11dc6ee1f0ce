#!/usr/bin/env bash
# The qemu example as a third party ships it: built against the SDK installed alone
# (build_qemu_example.sh), then `banlieue plugin check` in strict mode (--config) against real
# QEMU, with a state directory of its own (accel=auto: KVM when /dev/kvm opens read-write,
# else TCG). Every step must pass, and afterwards no QEMU of that state directory may run and
# no disk, socket or pidfile may be left.
set -euo pipefail
src=$1 banlieue=$2 built=${3:-}  # built: build_qemu_example.sh's work directory, when done
work=$(mktemp -d)
state=$work/state
# Whatever happens, no QEMU of this test outlives it: the state directory is in the command
# line of each one (its QMP socket and pidfile).
qemu_pids() {
  local p
  for p in /proc/[0-9]*; do
    if { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q -- "$state/"; then echo "${p#/proc/}"; fi
  done
}
cleanup() {
  local pid
  for pid in $(qemu_pids); do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x /usr/bin/qemu-system-x86_64 ] && [ -x /usr/bin/qemu-img ] ||
  fail "this test needs QEMU: install qemu-system-x86 and qemu-utils"

if [ -z "$built" ]; then
  "$(dirname "$0")/build_qemu_example.sh" "$src" "$work"
  built=$work
fi
plugin=$built/build/plugin/qemu
[ -f "$plugin/provider.json" ] || fail "no plugin directory at $plugin (build_qemu_example.sh)"

mkdir -p "$state"
cat >"$work/config.json" <<JSON
{"provider": {"apiVersion": "banlieue.io/v1alpha1", "kind": "Provider",
              "metadata": {"name": "qemu", "namespace": "default"},
              "spec": {"providerClassRef": {"name": "qemu"},
                       "connection": {"endpoint": "qemu://$state?accel=auto&powerdownSeconds=1"}}}}
JSON
rc=0
"$banlieue" --log-level info plugin check "$plugin" --config "$work/config.json" \
  >"$work/check.txt" 2>&1 || rc=$?
cat "$work/check.txt"
[ "$rc" -eq 0 ] || fail "plugin check exited with $rc"
grep -q '^result: PASS (.*, 0 failed, 0 skipped)$' "$work/check.txt" ||
  fail "plugin check did not pass every step"
grep -q 'PASS  reconcile QemuMachine again' "$work/check.txt" || fail "the check was not strict"
# The reconcile step really started QEMU: the plugin logged it, with the accelerator.
grep -q 'started QEMU of default/sample' "$work/check.txt" || fail "no QEMU was started"

left=$(qemu_pids)
[ -z "$left" ] || fail "QEMU processes of $state still run: $left"
disks=$(find "$state" -name '*.qcow2' -o -name '*.sock' -o -name '*.pid' | head)
[ -z "$disks" ] || fail "finalize left files behind: $disks"
[ -z "$(ls -A "$state/machines")" ] || fail "finalize left $(ls -A "$state/machines") in $state/machines"
echo "qemu plugin: built against the SDK alone, passed strict plugin check, left nothing behind"
