#!/usr/bin/env bash
# Regenerates deploy/ from the C++ API types: deploy/crds/, deploy/install/banlieue.yaml (the
# bootstrap objects without CRDs) and deploy/kustomization.yaml. They are generated output:
# the unit test api_drift_test fails when they differ from what the code produces.
#   scripts/gen.sh                      # builds build/dev/host/banlieue first
#   PLUGIN_DIR=dir scripts/gen.sh       # also the CRDs and one ProviderClass per plugin in dir
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build --preset dev --target banlieue >/dev/null
args=(crdgen --deploy deploy)
[ -n "${PLUGIN_DIR:-}" ] && args+=(--plugin-dir "$PLUGIN_DIR")
build/dev/host/banlieue "${args[@]}"
