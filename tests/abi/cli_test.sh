#!/usr/bin/env bash
# Exit codes and messages of the banlieue command line.
set -uo pipefail
banlieue=$1
plugins=$2
fail=0
expect() {  # expect <exit code> <substring> -- <args...>
  local want=$1 text=$2; shift 3
  local out; out=$("$banlieue" "$@" 2>&1); local got=$?
  if [ "$got" -ne "$want" ] || [[ "$out" != *"$text"* ]]; then
    echo "FAIL banlieue $*: exit $got (want $want), output: $out"; fail=1
  else
    echo "ok   banlieue $*"
  fi
}
expect 1 "cannot connect to the API server" -- controller --kubeconfig /nonexistent/kubeconfig
expect 0 "--image-plugin-dir" -- operator --help
expect 1 "banlieue operator: " -- operator --kubeconfig /nonexistent/kubeconfig --health-port -1 --metrics-port -1
expect 1 "/nonexistent/kubeconfig" -- imagebuilder --kubeconfig /nonexistent/kubeconfig --health-port -1 --metrics-port -1
expect 2 "--backend is required" -- image-import
# The checksum is refused before anything is read or connected (exit 11: ChecksumUnusable).
expect 11 "checksum algorithm 'md5' is not supported" -- image-import --backend libvirt --provider ns/p --image i --failure-domain fd --artifact /nonexistent --checksum md5:00
# image-checksum (the imagebuilder's checksum Job): the digest, or ArtifactMissing (exit 12).
artifact=$(mktemp); printf 'abc' > "$artifact"; outcome=$(mktemp)
expect 0 "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" -- image-checksum --file "$artifact" --termination-log "$outcome"
if ! grep -q '{"checksum":"sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}' "$outcome"; then
  echo "FAIL image-checksum termination log: $(cat "$outcome")"; fail=1
fi
expect 12 "ArtifactMissing" -- image-checksum --file /nonexistent/artifact.raw --termination-log "$outcome"
if ! grep -q '"reason":"ArtifactMissing"' "$outcome"; then
  echo "FAIL image-checksum termination log on a missing file: $(cat "$outcome")"; fail=1
fi
expect 2 "not in {sha256,sha512}" -- image-checksum --file "$artifact" --algorithm md5
rm -f "$artifact" "$outcome"
expect 0 "name: virtualmachines.banlieue.io" -- crdgen
expect 1 "plugin directory does not exist" -- crdgen --plugin-dir /nonexistent/banlieue-plugins
expect 2 "--provider must be <namespace>/<name>" -- provider libvirt --provider just-a-name
expect 2 "--provider is required" -- provider libvirt
expect 0 "kind: Namespace" -- bootstrap operator --dry-run --plugin-dir /nonexistent/banlieue-plugins
expect 0 "name: banlieue-system" -- bootstrap operator --dry-run --plugin-dir /nonexistent/banlieue-plugins
# Every parse or validation error CLI11 reports is the documented usage error, exit 2 (CLI11's
# own codes would be 105 validation, 106 required, 109 extras, 102 conversion).
expect 2 "not in range" -- operator --kubeconfig /nonexistent/kubeconfig --workers 0
expect 2 "not in {raw,qcow2,iso,ova,vmdk}" -- image-import --backend libvirt --provider ns/p --image i --failure-domain fd --artifact /nonexistent --checksum sha256:00 --format floppy
expect 2 "Directory does not exist" -- plugin check /nonexistent/banlieue-plugins
expect 2 "The following argument was not expected: --no-such-flag" -- controller --no-such-flag
expect 2 "A subcommand is required" -- no-such-role
expect 2 "Could not convert" -- controller --kubeconfig /nonexistent/kubeconfig --kube-qps fast
expect 2 "A subcommand is required" --
expect 0 "Usage: banlieue" -- --help
expect 2 "--log-level 'loud' is not a level" -- --log-level loud controller
expect 2 "--log-format 'yaml' must be text or json" -- --log-format yaml controller
# Global flags are also taken after the command.
expect 2 "--log-level 'loud' is not a level" -- controller --log-level loud
expect 2 "dir is required" -- plugin check
# --log-format json writes one JSON object per line.
line=$("$banlieue" --log-format json --log-level info plugin inspect "$plugins/current" 2>&1 >/dev/null | grep 'loaded plugin' | head -n1)
if [[ "$line" =~ ^\{\"ts\":\"[0-9T:.-]+Z\",\"level\":\"info\",\"logger\":\"plugin.loader\",\"msg\":\"loaded\ plugin\ testprov ]]; then
  echo "ok   --log-format json"
else
  echo "FAIL --log-format json wrote: $line"; fail=1
fi
expect 0 '"descriptor":{"name":"testprov"' -- plugin inspect "$plugins/current"
expect 1 "needs ABI major 2" -- plugin inspect "$plugins/manifest_wrong_major"
exit $fail
