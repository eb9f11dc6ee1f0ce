#!/usr/bin/env bash
# `banlieue plugin check` on the built libvirt plugin, against a custom test-driver node that
# holds the sample's pool, image volume and network, so every slot runs for real.
set -euo pipefail
banlieue=$1 plugin_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/node.xml" <<XML
<node>
  <cpu><mhz>2000</mhz><model>i686</model><active>2</active><nodes>1</nodes><sockets>1</sockets>
    <cores>2</cores><threads>1</threads></cpu>
  <memory>8388608</memory>
  <network><name>default</name><bridge name='virbr0'/><ip address='192.168.122.1' netmask='255.255.255.0'/></network>
  <pool type='dir'>
    <name>default-pool</name>
    <capacity unit='GiB'>100</capacity><allocation>0</allocation><available unit='GiB'>100</available>
    <target><path>/default-pool</path></target>
    <volume type='file'><name>base.qcow2</name><capacity unit='GiB'>1</capacity><allocation>0</allocation>
      <target><format type='qcow2'/></target></volume>
  </pool>
</node>
XML
cat > "$work/config.json" <<JSON
{"provider": {"apiVersion": "banlieue.io/v1alpha1", "kind": "Provider",
              "metadata": {"name": "kvm1", "namespace": "default"},
              "spec": {"providerClassRef": {"name": "libvirt"},
                       "connection": {"endpoint": "test://$work/node.xml", "allowTestDriver": true},
                       "capabilities": {"storageClasses": [{"name": "std", "target": {"pool": "default-pool"}}],
                                        "networkClasses": [{"name": "lan", "target": {"network": "default"}}]}}}}
JSON
out=$("$banlieue" --log-level warn plugin check "$plugin_dir" --config "$work/config.json" 2>&1) || {
  echo "$out"; echo "plugin check failed"; exit 1; }
echo "$out"
# The sample really reconciled (not only a well-formed error) and introspect found the classes.
echo "$out" | grep -Eq 'reconcile LibvirtMachine.*OK' || { echo "the sample did not reconcile OK"; exit 1; }
# Snapshots are offered and really ran on the reconciled domain (not "not offered").
echo "$out" | grep -Eq 'PASS +snapshot LibvirtMachine +created' || {
  echo "the snapshot step did not create, list, revert and delete a snapshot"; exit 1; }
# The console is offered; the test driver's domains have none, which the step accepts as a
# precondition (the real daemon's console is libvirt_e2e_test's).
echo "$out" | grep -Eq 'PASS +console LibvirtMachine +well-formed error: FAILED_PRECONDITION ConsoleUnavailable' || {
  echo "the console step did not reach the test driver's domain"; exit 1; }
echo "libvirt plugin passed plugin check"
