#!/usr/bin/env bash
# Image import throughput (issue #23): `banlieue image-import` of one artifact into a real
# libvirtd's directory pool, against `sha256sum` + `cp` of the same file into the same pool
# directory. Both start from the artifact in the page cache (it was just written) and end with
# `sync`, so each pays for its bytes reaching the disk. The import is the whole command an
# import Job runs: the host's checksum verification, the plugin load, the libvirt plugin's own
# checks and its upload through virStorageVolUpload. The volume is compared byte for byte with
# the artifact afterwards. Then `virsh vol-upload` of the same file into a fresh volume of the
# same daemon: libvirt's own client, the ceiling of the upload path. One JSON document on
# stdout; progress on stderr. Needs root (a private libvirtd, tests/support/private_libvirtd.h);
# re-runs itself with sudo. Traffic: the daemon's unix socket, or 127.0.0.1 with --tls.
#
#   bench/import_bench.sh [--size-mib N] [--build-dir DIR] [--tls] [--keep]
#     --size-mib N   the artifact's size (default 2048, the issue's 2 GiB)
#     --build-dir D  where banlieue, the libvirt plugin and private_libvirtd_holder are built
#                    (default build/release; built here when missing, JOBS compile jobs)
#     --tls          reach the daemon over qemu+tls:// on 127.0.0.1, as an import Job reaches a
#                    libvirt host (default: its unix socket)
#     --keep         leave the work directory (under /var/tmp) afterwards
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }
argv=("$@")
size_mib=2048 build=build/release tls=0 keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --size-mib) size_mib=${2:?--size-mib needs a number}; shift 2 ;;
    --build-dir) build=${2:?--build-dir needs a directory}; shift 2 ;;
    --tls) tls=1; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench/import_bench.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
[[ $size_mib =~ ^[1-9][0-9]*$ ]] || { echo "bench/import_bench.sh: --size-mib must be a positive integer" >&2; exit 2; }
if [ "$(id -u)" -ne 0 ]; then exec sudo -E "$0" "${argv[@]}"; fi
say() { printf '[import-bench %4ss] %s\n' "$SECONDS" "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

bin=$build/host/banlieue plugins=$build/plugins-dir holder=$build/tests/support/private_libvirtd_holder
if [ ! -x "$bin" ] || [ ! -x "$holder" ] || [ ! -d "$plugins/libvirt" ]; then
  preset=$(basename "$build")
  say "building banlieue, the libvirt plugin and private_libvirtd_holder ($preset)"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j"${JOBS:-2}" --target banlieue banlieue-provider-libvirt \
    private_libvirtd_holder >&2
fi

# The pool is a directory on the same disk as the artifact and the copy.
work=$(mktemp -d /var/tmp/banlieue-import-bench.XXXXXX)
holder_pid=""
cleanup() {
  [ -z "$holder_pid" ] || { kill "$holder_pid" 2>/dev/null; wait "$holder_pid" 2>/dev/null || true; }
  if [ "$keep" -eq 1 ]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

say "starting a private libvirtd in $work"
"$holder" "$work" bench-pool $([ "$tls" -eq 1 ] && echo 127.0.0.1) >"$work/holder.log" 2>&1 &
holder_pid=$!
for _ in $(seq 300); do
  [ -f "$work/holder.ready" ] && break
  kill -0 "$holder_pid" 2>/dev/null || fail "private_libvirtd_holder exited: $(cat "$work/holder.log")"
  sleep 0.1
done
[ -f "$work/holder.ready" ] || fail "libvirtd did not start in 30 s"
pool_dir=$work/pool
credentials=()
if [ "$tls" -eq 1 ]; then
  uri=$(awk '{ print $2 }' "$work/holder.ready")
  mkdir -p "$work/credentials"
  cp "$work/pki/cacert.pem" "$work/credentials/ca.crt"
  cp "$work/pki/clientcert.pem" "$work/credentials/tls.crt"
  cp "$work/pki/clientkey.pem" "$work/credentials/tls.key"
  credentials=(--credentials-dir "$work/credentials")
else
  uri=$(cat "$work/holder.uri")
fi

say "writing a $size_mib MiB artifact"
artifact=$work/artifact.raw
head -c "$((size_mib << 20))" /dev/urandom >"$artifact"
sha=$(sha256sum "$artifact" | cut -d' ' -f1)
sync

now() { date +%s.%N; }
say "sha256sum + cp into the pool directory, then sync"
t0=$(now)
sha256sum "$artifact" >/dev/null
cp "$artifact" "$pool_dir/copy.raw"
sync
copy_seconds=$(echo "$(now) - $t0" | bc -l)
rm -f "$pool_dir/copy.raw"
sync

cat >"$work/provider.json" <<EOF
{"apiVersion":"banlieue.io/v1alpha1","kind":"Provider",
 "metadata":{"name":"bench","namespace":"bench","uid":"bench-provider"},
 "spec":{"providerClassRef":{"name":"libvirt"},"connection":{"endpoint":"$uri"},
  "capabilities":{"storageClasses":[{"name":"bench","target":{"pool":"bench-pool"}}]}}}
EOF
cat >"$work/image.yaml" <<EOF
apiVersion: banlieue.io/v1alpha1
kind: VMImage
metadata: {name: bench, uid: bench-image}
spec:
  sources:
  - {providerClass: libvirt, kind: Url, ref: unused, importFrom: bench.invalid/artifact:1}
status:
  buildArtifact: {kind: cloudImage, phase: Ready, file: artifact.raw}
EOF
say "banlieue image-import into the pool ($( [ "$tls" -eq 1 ] && echo "qemu+tls, 127.0.0.1" || echo "unix socket")), then sync"
t0=$(now)
"$bin" image-import --plugin-dir "$plugins" --backend libvirt \
  --provider-file "$work/provider.json" --image-file "$work/image.yaml" "${credentials[@]}" \
  --failure-domain host --artifact "$artifact" --format raw --checksum "sha256:$sha" \
  --termination-log "$work/termination-log" >"$work/import.log" 2>&1 ||
  fail "image-import exited $?: $(tail -n 20 "$work/import.log")"
sync
import_seconds=$(echo "$(now) - $t0" | bc -l)
volume=$pool_dir/bench-${sha:0:12}.raw
[ -f "$volume" ] || fail "no volume $volume in the pool: $(ls "$pool_dir")"
cmp -s "$artifact" "$volume" || fail "the volume differs from the artifact"
say "the volume is byte-identical to the artifact"

# libvirt's own client on the same path: virsh vol-upload into a fresh volume (no checksum, no
# plugin), the ceiling of any import through virStorageVolUpload on this daemon and disk.
say "virsh vol-upload of the same file into a fresh volume, then sync"
virsh_uri=$(cat "$work/holder.uri")
virsh -q -c "$virsh_uri" vol-create-as bench-pool virsh.raw "$((size_mib << 20))" \
  --allocation 0 --format raw >/dev/null || fail "virsh vol-create-as failed"
sync
t0=$(now)
virsh -q -c "$virsh_uri" vol-upload --pool bench-pool virsh.raw "$artifact" ||
  fail "virsh vol-upload failed"
sync
virsh_seconds=$(echo "$(now) - $t0" | bc -l)

python3 - "$size_mib" "$copy_seconds" "$import_seconds" "$tls" "$virsh_seconds" <<'EOF'
import json, os, sys
size_mib, copy_s, import_s, tls = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
virsh_s = float(sys.argv[5])
print(json.dumps({
    "size_mib": size_mib,
    "transport": "qemu+tls (127.0.0.1)" if tls else "unix socket",
    "copy_seconds": round(copy_s, 2),
    "copy_mb_per_s": round(size_mib / copy_s, 1),
    "import_seconds": round(import_s, 2),
    "import_mb_per_s": round(size_mib / import_s, 1),
    "import_ratio_to_copy": round(copy_s / import_s, 3),
    "virsh_upload_seconds": round(virsh_s, 2),
    "virsh_ratio_to_copy": round(copy_s / virsh_s, 3),
    "import_ratio_to_virsh": round(virsh_s / import_s, 3),
    "machine": {"nproc": os.cpu_count(), "loadavg": os.getloadavg()[0]},
}, indent=2))
EOF
