#!/usr/bin/env bash
# Style checks: clang-format on every C/C++ file; clang-tidy (the .clang-tidy allowlist) on the
# host's and in-tree plugins' sources, and through them the SDK headers, unless --format-only.
# clang-tidy needs a configured build (compile_commands.json): cmake --preset dev.
#   TIDY_SINCE=<git ref> scripts/lint.sh   # clang-tidy only on sources changed since <ref>
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
  changed=$( (git diff --name-only "$TIDY_SINCE" -- 'host/*.cc' 'plugins/*.cc';
              git ls-files --others --exclude-standard -- 'host/*.cc' 'plugins/*.cc') | sort -u)
  sources=$(comm -12 <(printf '%s\n' $sources | sort) <(printf '%s\n' $changed))
  echo "lint: clang-tidy on $(echo "$sources" | wc -w) files changed since $TIDY_SINCE"
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
# shellcheck disable=SC2086
printf '%s\n' $sources | xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet >"$out" 2>&1 || status=1
grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter' "$out" || true
[ "$status" -eq 0 ] || { echo "lint: clang-tidy found problems" >&2; exit 1; }
echo "lint: clang-tidy clean"
