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
#   SANITIZE=off scripts/test.sh     # without the sanitizer tiers (a quicker local run)
#
# After the dev build's unit and abi tiers, the same two tiers run again under clang's
# ASan+UBSan (preset ci-asan, which builds only what they run, and the libFuzzer targets), the
# threaded runtime tests (label `threads`: informer, work queue, leader election, controller,
# events) under TSan (preset ci-tsan, which builds only those), and every fuzz target for
# FUZZ_SECONDS (default 6) over its seed corpus (tier `fuzz`). Only with the dev preset:
# PRESET=asan is itself a sanitizer run.
# Time budget (docs/development.md, "CI time budget"): a fresh machine's run within 45 minutes, a warm
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
integration_pid=""
asan_build_pid=""
stop_background() {  # the integration tier and the ci-asan build, when the run ends while they run
  local pid
  for pid in $integration_pid $asan_build_pid; do
    pkill -TERM -P "$pid" 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
# The sanitizer builds are unity builds (16 sources a translation unit: 3-4 times faster to
# compile cold). CMake writes each source's absolute path into the unity sources, so ccache
# would miss in every clone at a new path: as root, they are configured, built and run from one
# fixed path where this tree is bind-mounted for the run, one run at a time (docs/adr/0028).
sanitizer_src=$PWD
fixed_src=/var/tmp/banlieue-ci-src
mount_fixed_src() {
  [ "$(id -u)" -eq 0 ] || return 0
  mkdir -p "$fixed_src"
  exec 9>"$fixed_src.lock"
  flock 9  # another run's sanitizer steps
  if mountpoint -q "$fixed_src"; then umount "$fixed_src"; fi  # left by a killed run
  mount --bind "$PWD" "$fixed_src"
  sanitizer_src=$fixed_src
}
unmount_fixed_src() {
  [ "$sanitizer_src" = "$fixed_src" ] || return 0
  umount "$fixed_src" 2>/dev/null || umount -l "$fixed_src" 2>/dev/null || true
  sanitizer_src=$PWD
}
# configure_sanitizer <preset>: a build directory configured from the other path (this clone's
# own, or the fixed one) is configured afresh; ccache makes that cheap.
configure_sanitizer() {
  local cache=$build_dir/../$1/CMakeCache.txt
  if [ -f "$cache" ] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$sanitizer_src" "$cache"; then
    rm -rf "${cache%/CMakeCache.txt}/CMakeCache.txt" "${cache%/CMakeCache.txt}/CMakeFiles"
  fi
  (cd "$sanitizer_src" && nice -n 10 cmake --preset "$1" >/dev/null &&
    nice -n 10 cmake --build --preset "$1" -j "$jobs")
}

trap 'stop_background; unmount_fixed_src; rm -rf "$results"; [ -d "$cluster_state" ] && deploy/local/down --purge --state-dir "$cluster_state" >/dev/null 2>&1' EXIT

# The fewest tests each tier may run: a label typo or a test binary that registers nothing must
# not pass as an empty or shrunken tier. Raise these when tests are added.
declare -A minimum=([unit]=556 [abi]=97 [asan-unit]=541 [asan-abi]=97 [tsan-threads]=50
  [fuzz]=15 [integration]=280 [e2e]=12)
tiers=(unit abi)
sanitize=${SANITIZE:-on}
export FUZZ_SECONDS=${FUZZ_SECONDS:-6}  # per fuzz target (fuzz/run_bounded.sh)
case $sanitize in on | off) ;; *) echo "test.sh: SANITIZE must be on or off (got '$sanitize')" >&2; exit 2 ;; esac
[ "$preset" = dev ] || sanitize=off
[ "$sanitize" = on ] && tiers+=(asan-unit asan-abi tsan-threads fuzz)
tiers+=(integration e2e)
# The integration tier runs one more test at a time than cores (INTEGRATION_JOBS): its tests
# often wait on the cluster, and the tests that hold the banlieue-system-roles lock run one
# after another (about 770 s of the tier's 1,221 s at -j2 on 2026-12-07), so the others need
# the spare slot (docs/development.md, "CI time budget").
integration_jobs=${INTEGRATION_JOBS:-$((jobs + 1))}

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

# Free disk, checked before anything is built: a full run writes about 25 GB (build/dev 11,
# the ci-asan tree 13, ci-tsan and the node's containers the rest). On a disk that fills up
# halfway, every later tier fails for reasons far from the cause; here it is one clear line.
free_gb() { df -P -BG "$1" | awk 'NR == 2 { sub("G", "", $4); print $4 }'; }
need_gb=${NEED_FREE_GB:-28}
free_at_start=$(free_gb .)
if [ "$free_at_start" -lt "$need_gb" ]; then
  echo "test.sh: $free_at_start GB free on $(df -P . | awk 'NR == 2 { print $6 }'); a full run needs about $need_gb (free some, e.g. old clones' build directories, or set NEED_FREE_GB)" >&2
  exit 2
fi

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

# The ci-asan build, the largest step of a fresh run after this one, starts now (niced) beside
# clang-tidy, the images and the unit and abi tiers; the sanitizer steps below wait for it.
if [ "$sanitize" = on ]; then
  mount_fixed_src
  (configure_sanitizer ci-asan >"$results/ci-asan-build.log" 2>&1; echo $? >"$results/ci-asan-build.rc") &
  asan_build_pid=$!
  asan_build_started=$SECONDS
fi

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
# run_tier <tier>: one CTest run of a tier, or of a tier from a sanitizer build (asan-unit runs
# the unit tier of ci-asan; tsan-threads the tests labelled threads of ci-tsan).
run_tier() {
  local tier=$1 test_preset=$preset label=$1
  case $tier in
    asan-*) test_preset=ci-asan label=${tier#asan-} ;;
    tsan-*) test_preset=ci-tsan label=${tier#tsan-} ;;
    fuzz) test_preset=ci-asan label=fuzzing ;;
  esac
  # A test's first label is its tier; tests of the plugin host also carry `abi`, so the abi
  # tier leaves out tests that belong to another tier.
  local select=(-L "^${label}\$")
  [ "$label" = abi ] && select+=(-LE '^(unit|integration|e2e)$')
  # The corpus replays (label fuzz) ran in the dev build's unit tier, and the fuzz tier runs the
  # same entry points over the same seeds under the same sanitizers; replayed again at -O0 under
  # ASan they were 120 s of the 180 s asan-unit took.
  [ "$tier" = asan-unit ] && select+=(-LE '^fuzz$')
  local priority=()  # beside the integration tier, which is the longer path, they yield to it
  case $tier in asan-* | tsan-* | fuzz) priority=(nice -n 10) ;; esac
  # One local cluster (the CTest fixture local_cluster, about 80 s to start and stop) serves
  # both tiers that need it: integration starts it and leaves it up, e2e uses it and stops it.
  [ "$tier" = integration ] && select+=(-E '^local_cluster_down$' -FC '^local_cluster$')
  [ "$tier" = e2e ] && select+=(-FS '^local_cluster$')
  local dir=$PWD tier_jobs=$jobs
  [ "$test_preset" = "$preset" ] || dir=$sanitizer_src
  [ "$tier" = integration ] && tier_jobs=$integration_jobs
  # --timeout: the limit of a test that sets none (every test sets one, fixture_verdicts checks;
  # CTest's own default is no limit at all, and one hang once held a CI run to its end).
  (cd "$dir" && "${priority[@]}" ctest --preset "$test_preset" "${select[@]}" -j "$tier_jobs" \
    --timeout 900 --no-tests=error --output-on-failure --output-junit "$results/$tier.xml")
}

# The sanitizer builds (niced: they run beside the integration tier) and their tiers.
sanitizer_steps() {
  step "configure and build (ci-asan: the unit and abi tiers and the fuzz targets, clang ASan+UBSan; started after the dev build $((SECONDS - asan_build_started)) s ago)"
  wait "$asan_build_pid" || true
  asan_build_pid=""
  cat "$results/ci-asan-build.log"
  [ "$(cat "$results/ci-asan-build.rc" 2>/dev/null)" = 0 ] || failed=1
  step "tier asan-unit"
  run_tier asan-unit || failed=1
  step "tier asan-abi"
  run_tier asan-abi || failed=1
  step "configure and build (ci-tsan: the tests labelled threads, under TSan)"
  configure_sanitizer ci-tsan || failed=1
  step "tier tsan-threads"
  run_tier tsan-threads || failed=1
  step "tier fuzz (every libFuzzer target of ci-asan for $FUZZ_SECONDS s over its seeds)"
  run_tier fuzz || failed=1
  unmount_fixed_src
}

if [ "$sanitize" = on ]; then
  # The integration tier mostly waits on its cluster (in a warm run the machine was busy 84% of
  # the time, building included) and is the longest path: it starts first, and the unit and abi
  # tiers, then the sanitizer steps, run beside it. Its output follows theirs.
  step ""
  integration_log=$results/integration.log
  integration_started=$(date +%s)
  (
    rc=0
    run_tier integration >"$integration_log" 2>&1 || rc=$?
    echo "$rc $(($(date +%s) - integration_started))" >"$results/integration.done"
  ) &
  integration_pid=$!
  printf '\n== tier integration started in the background (%ss); its output follows the sanitizer steps\n' \
    "$SECONDS"
  for tier in unit abi; do
    step "tier $tier"
    run_tier "$tier" || failed=1
  done
  sanitizer_steps
  step "waiting for tier integration"
  wait "$integration_pid" || true
  integration_pid=""
  cat "$integration_log"
  integration_rc=1 integration_seconds=0
  [ -f "$results/integration.done" ] && read -r integration_rc integration_seconds <"$results/integration.done"
  [ "$integration_rc" = 0 ] || failed=1
  step ""
  step_names+=("tier integration (beside the unit, abi and sanitizer steps, from their start)")
  step_seconds+=("$integration_seconds")
else
  for tier in unit abi; do
    step "tier $tier"
    run_tier "$tier" || failed=1
  done
  step "tier integration"
  run_tier integration || failed=1
fi
step "tier e2e"
run_tier e2e || failed=1
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
echo "  free disk: $free_at_start GB at the start, $(free_gb .) GB at the end"

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
