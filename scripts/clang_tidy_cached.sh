#!/usr/bin/env bash
# clang-tidy on one source file, skipped when the very same inputs were already found clean.
#   scripts/clang_tidy_cached.sh <build dir> <file relative to the repository root>
# Run from the repository root by scripts/lint.sh, which exports:
#   TIDY_CACHE_DIR  where clean results are remembered ("" disables the cache)
#   TIDY_BASE_KEY   hash of what is shared by every file: clang-tidy's binary and version, every
#                   .clang-tidy that can apply, and clang-tidy's arguments
# The key adds, for each of the file's compile commands (clang-tidy runs them all): the command
# without its output paths, and the compiler's preprocessed output with the same flags, so an
# edit to any header the file includes - or a changed -D/-I - misses the cache. The repository
# root is replaced by a placeholder in both, so clones and worktrees at other paths share entries.
# Only clean results (exit 0, no diagnostic) are stored: a file with findings always runs again.
# Prints clang-tidy's diagnostics, then one line "@@tidy <hit|ran|fail> <file>" for lint.sh.
set -euo pipefail
build=$1
file=$2
root=$PWD
tidy_args=(-p "$build" --quiet)

# The noise clang-tidy prints even when it finds nothing.
noise='^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter'

run_tidy() {  # run_tidy <key or empty>
  local out status=0
  out=$(clang-tidy "${tidy_args[@]}" "$file" 2>&1) || status=$?
  local shown
  shown=$(grep -v -E "$noise" <<<"$out" || true)
  if [ "$status" -eq 0 ] && ! grep -q -E '(warning|error): ' <<<"$out"; then
    if [ -n "$1" ]; then
      local entry="$TIDY_CACHE_DIR/${1:0:2}/$1"
      mkdir -p "${entry%/*}"
      # Written whole under a temporary name: a concurrent run never sees a partial entry.
      printf '%s\n' "$file" >"$entry.$$" && mv -f "$entry.$$" "$entry"
    fi
    [ -n "$shown" ] && printf '%s\n' "$shown"
    echo "@@tidy ran $file"
  else
    [ -n "$shown" ] && printf '%s\n' "$shown"
    echo "@@tidy fail $file"
    return 1
  fi
}

[ -n "${TIDY_CACHE_DIR:-}" ] || { run_tidy ""; exit; }

# Every compile command of the file, as one shell-quoted line each, preceded by its directory.
entries=$(jq -r --arg root "$root" --arg f "$root/$file" '
  .[] | (if (.file | startswith("/")) then .file else .directory + "/" + .file end) as $abs
  | select($abs == $f)
  | .directory, (.command // (.arguments | map(@sh) | join(" ")))' "$build/compile_commands.json")
# No compile command: clang-tidy reports that itself; nothing to key on.
[ -n "$entries" ] || { run_tidy ""; exit; }

normalize() { ROOT=$root perl -pe 's/\Q$ENV{ROOT}\E/\@ROOT\@/g'; }

key_input=$TIDY_BASE_KEY
while IFS= read -r dir && IFS= read -r command; do
  eval "set -- $command"
  words=()
  while [ $# -gt 0 ]; do
    case $1 in
      -o | -MF | -MT | -MQ) shift 2 ;;  # output paths: not inputs of the check
      -c | -MD | -MMD) shift ;;
      *) words+=("$1"); shift ;;
    esac
  done
  # A file that does not preprocess cannot be keyed: clang-tidy says why.
  if ! preprocessed=$(cd "$dir" && "${words[@]}" -E 2>/dev/null | normalize | sha256sum); then
    run_tidy ""
    exit
  fi
  key_input+=$'\n'"$(printf '%q ' "$dir" "${words[@]}" | normalize)"$'\n'"$preprocessed"
done <<<"$entries"
key=$(printf '%s' "$key_input" | sha256sum | cut -d' ' -f1)

entry="$TIDY_CACHE_DIR/${key:0:2}/$key"
if [ -f "$entry" ]; then
  touch "$entry"  # recently used entries survive lint.sh's pruning
  echo "@@tidy hit $file"
  exit 0
fi
run_tidy "$key"
