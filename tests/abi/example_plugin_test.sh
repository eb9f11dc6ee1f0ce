#!/usr/bin/env bash
# The third-party story end to end: install banlieue's SDK into a fresh prefix, build the
# example plugin in its own CMake project against that prefix only, and run
# `banlieue plugin check` on the result with a real directory as its backend.
set -euo pipefail
src=$1 build=$2 banlieue=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
[ -f "$work/prefix/lib/cmake/banlieue-sdk/banlieue-sdkConfig.cmake" ] || { echo "SDK package not installed"; exit 1; }
# Copied out of the tree beside the prefix: nothing but the prefix can be found, and every path
# of the build is under $work (out_of_tree_ccache).
cp -r "$src/examples/file-provider" "$work/file-provider"
. "$src/tests/support/out_of_tree_ccache.sh"
mapfile -t cache_args < <(out_of_tree_ccache "$work")
cmake -S "$work/file-provider" -B "$work/build" -G Ninja "${cache_args[@]}" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$work/build"
# The example must not have reached into the source tree for headers.
if grep -q -- "-I$src" "$work/build/build.ninja"; then
  echo "the example build includes headers from the source tree"; exit 1
fi

mkdir -p "$work/vms"
cat > "$work/config.json" <<JSON
{"provider": {"apiVersion": "banlieue.io/v1alpha1", "kind": "Provider",
              "metadata": {"name": "files", "namespace": "default"},
              "spec": {"providerClassRef": {"name": "file"},
                       "connection": {"endpoint": "file://$work/vms"}}}}
JSON
"$banlieue" --log-level warn plugin check "$work/build/plugin/file" --config "$work/config.json"
# import_image left the artifact in the backend; reconcile+finalize left no VM behind.
ls "$work/vms/images/banlieue-plugin-check.raw" >/dev/null
if ls "$work/vms"/*.json >/dev/null 2>&1; then echo "finalize left a VM file behind"; exit 1; fi
echo "example plugin: built against the installed SDK and passed plugin check"
