#!/usr/bin/env bash
# Regenerates deploy/ from the C++ API types: deploy/crds/, deploy/install/banlieue.yaml (the
# bootstrap objects without CRDs, with one ProviderClass and provider ClusterRole per in-tree
# plugin: libvirt, proxmox, vsphere) and deploy/kustomization.yaml. They are generated output:
# the unit test api_drift_test fails when they differ from what the code produces.
#   scripts/gen.sh                      # builds build/dev's binary and in-tree plugins first
#   PLUGIN_DIR=dir scripts/gen.sh       # the plugins in dir instead of the in-tree ones
set -euo pipefail
cd "$(dirname "$0")/.."
# The in-tree plugins: the backends under plugins/ (not the examples, which a third party
# would ship in a provider image of its own).
in_tree=()
for cml in plugins/*/CMakeLists.txt; do in_tree+=("$(basename "$(dirname "$cml")")"); done
cmake --build --preset dev --target banlieue \
  "${in_tree[@]/#/banlieue-provider-}" >/dev/null
plugin_dir=${PLUGIN_DIR:-}
if [ -z "$plugin_dir" ]; then
  # Plugin discovery reads real directories (no symlinks): a copy of the in-tree ones.
  plugin_dir=$(mktemp -d)
  trap 'rm -rf "$plugin_dir"' EXIT
  for p in "${in_tree[@]}"; do cp -r "build/dev/plugins-dir/$p" "$plugin_dir/$p"; done
fi
build/dev/host/banlieue crdgen --deploy deploy --plugin-dir "$plugin_dir"
