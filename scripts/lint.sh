#!/usr/bin/env bash
# Style checks: clang-format on every C/C++ file; clang-tidy (the .clang-tidy allowlist) on the
# host's and in-tree plugins' sources, and through them the SDK headers, unless --format-only.
# clang-tidy needs a configured build (compile_commands.json): cmake --preset dev.
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
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
# shellcheck disable=SC2086
printf '%s\n' $sources | xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet >"$out" 2>&1 || status=1
grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter' "$out" || true
[ "$status" -eq 0 ] || { echo "lint: clang-tidy found problems" >&2; exit 1; }
echo "lint: clang-tidy clean"
