#!/usr/bin/env bash
# Style checks: clang-format on every C/C++ file; clang-tidy (the .clang-tidy allowlist) on the
# host's and in-tree plugins' sources, and through them the SDK headers, unless --format-only.
# clang-tidy needs a configured build (compile_commands.json): cmake --preset dev.
#   TIDY_SINCE=<git ref> scripts/lint.sh   # clang-tidy only on sources changed since
#                                          # the branch left <ref>
#                                          # (quick runs on a branch; CI always checks all)
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files --cached --others --exclude-standard -- '*.h' '*.cc' | grep -v '^build/' || true)
if [ -n "$files" ]; then
  # shellcheck disable=SC2086
  clang-format --dry-run -Werror $files
fi
echo "lint: clang-format clean ($(echo "$files" | wc -w) files)"
[ "${1:-}" = "--format-only" ] && exit 0

build=${BUILD_DIR:-build/dev}
[ -f "$build/compile_commands.json" ] || { echo "lint: configure first (cmake --preset dev)" >&2; exit 1; }
sources=$(git ls-files --cached --others --exclude-standard -- 'host/*.cc' 'plugins/*.cc')
if [ -n "${TIDY_SINCE:-}" ]; then
  # Against the merge base: what this branch changed, not what <ref> gained since it forked.
  changed=$( (git diff --name-only "$(git merge-base "$TIDY_SINCE" HEAD)" -- 'host/*.cc' 'plugins/*.cc';
              git ls-files --others --exclude-standard -- 'host/*.cc' 'plugins/*.cc') | sort -u)
  sources=$(comm -12 <(printf '%s\n' $sources | sort) <(printf '%s\n' $changed))
fi
# Clean results are remembered across runs and clones (CI builds a fresh clone on the same
# machine, like ccache): scripts/clang_tidy_cached.sh keys each file on everything that can
# change what clang-tidy says about it. TIDY_CACHE=0 runs every file; see docs/adr/0018.
cache_dir=""
if [ "${TIDY_CACHE:-1}" != 0 ]; then
  cache_dir=${TIDY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/banlieue/clang-tidy}
  mkdir -p "$cache_dir"
  # Entries are empty-ish marker files touched on every hit; unused ones go after 30 days.
  find "$cache_dir" -type f -mtime +30 -delete 2>/dev/null || true
fi
tidy_bin=$(readlink -f "$(command -v clang-tidy)")
# What applies to every file: the binary (and the LLVM libraries it loads), its version, every
# .clang-tidy it can read (the repository's and any above it: clang-tidy looks upwards, and the
# naming check reads the config next to each header), and the arguments clang-tidy gets.
base_key=$( {
  echo "clang_tidy_cached v1 -p <build> --quiet"
  clang-tidy --version
  ldd "$tidy_bin" | awk '/lib(clang|LLVM)/ {print $3}' |
    xargs stat -L -c '%n %s %Y' "$tidy_bin"
  git ls-files --cached --others --exclude-standard -- '.clang-tidy' '*/.clang-tidy' |
    while IFS= read -r config; do
      if [ -f "$config" ]; then echo "$config" && cat "$config"; fi
    done
  dir=$PWD
  while [ "$dir" != / ]; do
    dir=$(dirname "$dir")
    if [ -f "$dir/.clang-tidy" ]; then echo "$dir/.clang-tidy" && cat "$dir/.clang-tidy"; fi
  done
} | sha256sum | cut -d' ' -f1)

out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
echo "lint: clang-tidy on $(echo "$sources" | wc -w) files${TIDY_SINCE:+ changed since $TIDY_SINCE}," \
  "$(nproc) at a time${cache_dir:+, cache $cache_dir}"
# shellcheck disable=SC2086
printf '%s\n' $sources |
  TIDY_CACHE_DIR=$cache_dir TIDY_BASE_KEY=$base_key \
  xargs -r -P "$(nproc)" -n 1 scripts/clang_tidy_cached.sh "$build" >"$out" 2>&1 || status=1
grep -v '^@@tidy ' "$out" || true
hits=$(grep -c '^@@tidy hit ' "$out" || true)
ran=$(grep -c '^@@tidy ran ' "$out" || true)
failed=$(grep '^@@tidy fail ' "$out" | cut -d' ' -f3- || true)
echo "lint: clang-tidy: $ran files checked, $hits unchanged since a clean run (cached)"
if [ "$status" -ne 0 ]; then
  echo "lint: clang-tidy found problems in:" $failed >&2
  exit 1
fi
echo "lint: clang-tidy clean"
