#!/usr/bin/env bash
# Style checks: clang-format on every C/C++ file; clang-tidy (the .clang-tidy allowlist) on the
# host and SDK sources unless --format-only. Needs a configured build (compile_commands.json)
# for clang-tidy: cmake --preset dev.
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
# shellcheck disable=SC2086
printf '%s\n' $sources | xargs -P "$(nproc)" -n 4 clang-tidy -p "$build" --quiet
echo "lint: clang-tidy clean"
