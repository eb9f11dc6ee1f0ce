#!/usr/bin/env bash
# The C author's story end to end: configure banlieue with BANLIEUE_SDK_ONLY (nothing built),
# install that SDK alone into a fresh prefix, build examples/c-provider (plain C99) with
# pkg-config and make only, and pass `banlieue plugin check` in strict mode (--config) with a
# real directory as its backend.
set -euo pipefail
src=$1 banlieue=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. The SDK alone: only the ABI and SDK files, no binary, no plugin.
cmake -S "$src" -B "$work/sdk-build" -DBANLIEUE_SDK_ONLY=ON >/dev/null
cmake --install "$work/sdk-build" --prefix "$work/prefix" >/dev/null
prefix=$work/prefix
[ -f "$prefix/include/banlieue/provider_v1.h" ] || fail "the ABI header is not installed"
[ -f "$prefix/share/pkgconfig/banlieue-abi.pc" ] || fail "banlieue-abi.pc is not installed"
[ ! -e "$prefix/bin" ] || fail "the SDK-only install holds bin/: $(ls "$prefix/bin")"
[ ! -e "$prefix/lib/banlieue/plugins" ] || fail "the SDK-only install holds lib/banlieue/plugins"
size_kb=$(du -sk "$prefix" | cut -f1)
[ "$size_kb" -le 2048 ] || fail "the SDK-only install is ${size_kb} KB, expected at most 2 MB"

# 2. The plugin, from pkg-config alone: only the installed prefix's .pc files, and no header
# from the source tree. The example is copied out so the build cannot reach back into it.
cp -r "$src/examples/c-provider" "$work/c-provider"
export PKG_CONFIG_PATH=$prefix/share/pkgconfig
cflags=$(pkg-config --cflags banlieue-abi)
case "$cflags" in
  "-I$prefix/"*) ;;
  *) fail "pkg-config banlieue-abi gives '$cflags', not the installed prefix $prefix" ;;
esac
make -C "$work/c-provider" BUILD="$work/build" >"$work/make.log" 2>&1 || {
  cat "$work/make.log"
  fail "the C plugin does not build against the SDK alone"
}
cat "$work/make.log"
if grep -q -- "-I$src" "$work/make.log"; then fail "the C build includes headers from the source tree"; fi
if grep -qi "warning" "$work/make.log"; then fail "the C build is not warning-free"; fi
plugin=$work/build/plugin/cfile
library=$plugin/libbanlieue-provider-cfile.so
[ -f "$library" ] || fail "no $library"

# 3. Exactly one dynamic symbol is defined (version nodes, type A, are not symbols).
exported=$(nm -D --defined-only "$library" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }')
[ "$exported" = "banlieue_provider_v1_init" ] ||
  fail "$library exports [${exported//$'\n'/ }], expected only banlieue_provider_v1_init"

# 4. Strict plugin check against a real directory; it must pass every step.
mkdir -p "$work/vms"
cat >"$work/config.json" <<JSON
{"provider": {"apiVersion": "banlieue.io/v1alpha1", "kind": "Provider",
              "metadata": {"name": "cfiles", "namespace": "default"},
              "spec": {"providerClassRef": {"name": "cfile"},
                       "connection": {"endpoint": "file://$work/vms"}}}}
JSON
rc=0
"$banlieue" --log-level warn plugin check "$plugin" --config "$work/config.json" \
  >"$work/check.txt" 2>&1 || rc=$?
cat "$work/check.txt"
[ "$rc" -eq 0 ] || fail "plugin check exited with $rc"
grep -q '^result: PASS (.*, 0 failed, 0 skipped)$' "$work/check.txt" ||
  fail "plugin check did not pass every step"
grep -q 'PASS  reconcile CFileMachine again' "$work/check.txt" || fail "the check was not strict"
# import_image left the artifact in the backend; reconcile+finalize left no VM behind.
[ -f "$work/vms/images/banlieue-plugin-check.raw" ] || fail "import_image left no artifact"
if ls "$work/vms"/*.json >/dev/null 2>&1; then fail "finalize left a VM file behind"; fi
echo "C plugin: built with pkg-config against the SDK alone and passed strict plugin check"
