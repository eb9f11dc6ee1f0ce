#!/usr/bin/env bash
# Builds examples/qemu-provider the way a third party does: banlieue configured with
# BANLIEUE_SDK_ONLY (nothing built), that SDK installed alone into <work>/prefix, and the
# example, copied out of the tree, configured with find_package(banlieue-sdk) from that prefix
# only. The plugin directory is <work>/build/plugin/qemu. Fails when the build reaches into the
# source tree, warns, or the library exports anything but banlieue_provider_v1_init.
set -euo pipefail
src=$1 work=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work/sdk-build" "$work/prefix" "$work/qemu-provider" "$work/build"
mkdir -p "$work"
cmake -S "$src" -B "$work/sdk-build" -DBANLIEUE_SDK_ONLY=ON >/dev/null
cmake --install "$work/sdk-build" --prefix "$work/prefix" >/dev/null
prefix=$work/prefix
[ -f "$prefix/lib/cmake/banlieue-sdk/banlieue-sdkConfig.cmake" ] || fail "the SDK's CMake package is not installed"
[ ! -e "$prefix/bin" ] || fail "the SDK-only install holds bin/: $(ls "$prefix/bin")"

# Copied out, so nothing but the prefix can be found.
cp -r "$src/examples/qemu-provider" "$work/qemu-provider"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
. "$src/tests/support/out_of_tree_ccache.sh"
mapfile -t cache_args < <(out_of_tree_ccache "$work")
cmake -S "$work/qemu-provider" -B "$work/build" "${generator[@]}" "${cache_args[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Debug >/dev/null
nice -n 10 cmake --build "$work/build" -j2 -- >"$work/build.log" 2>&1 || {
  cat "$work/build.log"
  fail "the qemu example does not build against the SDK alone"
}
if grep -rq -- "-I$src" "$work/build" --include=build.ninja --include=flags.make; then
  fail "the example build includes headers from the source tree"
fi
if grep -qi "warning" "$work/build.log"; then cat "$work/build.log"; fail "the build is not warning-free"; fi

library=$work/build/plugin/qemu/libbanlieue-provider-qemu.so
[ -f "$library" ] || fail "no $library"
[ -f "$work/build/plugin/qemu/provider.json" ] || fail "no provider.json beside the library"
[ -f "$work/build/plugin/qemu/crds/qemumachines.yaml" ] || fail "no CRD in the plugin directory"
# Exactly one dynamic symbol is defined (version nodes, type A, are not symbols).
exported=$(nm -D --defined-only "$library" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }')
[ "$exported" = "banlieue_provider_v1_init" ] ||
  fail "$library exports [${exported//$'\n'/ }], expected only banlieue_provider_v1_init"
echo "built $library against the SDK alone (prefix $prefix)"
