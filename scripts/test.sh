#!/usr/bin/env bash
# The one test command: installs dependencies, builds the local Kubernetes control plane
# (cached outside the repo), configures, builds, checks formatting and style, and runs every
# CTest tier (unit, abi, integration, e2e). Exits non-zero on any failure, on any skip that
# tests/skip_allowlist.txt does not allow, and on a tier that ran fewer tests than it should.
#   scripts/test.sh              # dev preset (Debug); clang-tidy on what changed since the
#                                # last clean check (see TIDY below)
#   PRESET=asan scripts/test.sh  # the same under ASan+UBSan
#   TIDY=full scripts/test.sh    # clang-tidy on every file (also: TIDY=off, or SKIP_TIDY=1)
#   TIDY_SINCE=main scripts/test.sh  # clang-tidy only on files changed since main
#
# Time budget (README, "CI time budget"): a fresh machine's run within 45 minutes, a warm
# machine's (a second clone at another path) within 15. The summary prints each step's time.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${PRESET:-dev}
jobs=${JOBS:-$(nproc)}
tidy=${TIDY:-changed}
[ "${SKIP_TIDY:-0}" = 1 ] && tidy=off
build_dir=build/$preset
results=$(mktemp -d)
# The integration tier leaves the local cluster up for the e2e tier (below), which stops it; an
# interrupted run stops it here (a no-op when nothing runs).
cluster_state=$build_dir/local-cluster
trap 'rm -rf "$results"; [ -d "$cluster_state" ] && deploy/local/down --purge --state-dir "$cluster_state" >/dev/null 2>&1' EXIT

# The fewest tests each tier may run: a label typo or a test binary that registers nothing must
# not pass as an empty or shrunken tier. Raise these when tests are added.
declare -A minimum=([unit]=336 [abi]=80 [integration]=159 [e2e]=5)
tiers=(unit abi integration e2e)

step_names=()
step_seconds=()
current_step=""
step_started=$SECONDS
step() {  # closes the running step and starts the next ("" only closes)
  if [ -n "$current_step" ]; then
    step_names+=("$current_step")
    step_seconds+=($((SECONDS - step_started)))
  fi
  current_step=$1
  step_started=$SECONDS
  if [ -n "$1" ]; then printf '\n== %s (%ss)\n' "$1" "$SECONDS"; fi
}

step "setup"
scripts/setup.sh

step "local control plane binaries (deploy/local/build; cached after the first run)"
deploy/local/build

step "format check"
scripts/lint.sh --format-only

step "configure ($preset)"
cmake --preset "$preset" >/dev/null

step "build"
cmake --build --preset "$preset" -j "$jobs"

tidy_ok=1
case $tidy in
  off) ;;
  full)
    step "clang-tidy (every file)"
    BUILD_DIR=$build_dir scripts/lint.sh --tidy-only || tidy_ok=0
    ;;
  changed)
    since=${TIDY_SINCE:-$(scripts/lint.sh --clean-baseline)}
    step "clang-tidy (files changed since ${since:0:12}, and files including changed headers)"
    BUILD_DIR=$build_dir TIDY_SINCE=$since scripts/lint.sh --tidy-only || tidy_ok=0
    ;;
  *) echo "test.sh: TIDY must be changed, full or off (got '$tidy')" >&2; exit 2 ;;
esac

# The images the node runs, from this build (the integration fixture loads them; built here so
# the step shows in the times below, and cached by their inputs).
step "images (deploy/local/images: localhost/banlieue and the provider images, from $build_dir)"
deploy/local/images --build-dir "$build_dir"

failed=0
[ "$tidy_ok" = 1 ] || failed=1
for tier in "${tiers[@]}"; do
  step "tier $tier"
  # A test's first label is its tier; tests of the plugin host also carry `abi`, so the abi
  # tier leaves out tests that belong to another tier.
  select=(-L "^${tier}\$")
  [ "$tier" = abi ] && select+=(-LE '^(unit|integration|e2e)$')
  # One local cluster (the CTest fixture local_cluster, about 80 s to start and stop) serves
  # both tiers that need it: integration starts it and leaves it up, e2e uses it and stops it.
  [ "$tier" = integration ] && select+=(-E '^local_cluster_down$' -FC '^local_cluster$')
  [ "$tier" = e2e ] && select+=(-FS '^local_cluster$')
  if ! ctest --preset "$preset" "${select[@]}" -j "$jobs" --no-tests=error --output-on-failure \
         --output-junit "$results/$tier.xml"; then
    failed=1
  fi
done
step ""

# Counts every tier's results, lists its skipped tests, and fails on a skip the allow-list does
# not name and on a tier below its minimum.
printf '\n== summary (%ss)\n' "$SECONDS"
verdict=$(python3 scripts/test_results.py --allowlist tests/skip_allowlist.txt \
  $(for tier in "${tiers[@]}"; do printf ' %s=%s:%s' "$tier" "$results/$tier.xml" "${minimum[$tier]}"; done)) ||
  failed=1
printf '%s\n' "$verdict"
[ "$tidy_ok" = 1 ] || echo "  clang-tidy reported problems (see its step above)"

echo "  step times:"
for i in "${!step_names[@]}"; do
  printf '    %5ss  %s\n' "${step_seconds[i]}" "${step_names[i]}"
done
printf '    %5ss  in all\n' "$SECONDS"

if [ "$failed" -ne 0 ]; then
  echo "test.sh: FAILED"
  exit 1
fi
# A clean clang-tidy of the changes on top of a clean baseline makes this commit the next
# baseline on this machine (scripts/lint.sh --clean-baseline).
if [ "$tidy" != off ] && [ -z "$(git status --porcelain --untracked-files=no)" ]; then
  scripts/lint.sh --record-clean "$(git rev-parse HEAD)"
fi
echo "test.sh: all tiers passed"
