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

normalize() { ROOT=$root perl -pe 's/\Q$ENV{ROOT}\E/\@ROOT\@/g'; }

# Prints the file's cache key; fails when there is nothing to key on (no compile command, or
# the file does not preprocess: clang-tidy then says why).
cache_key() {
  local entries dir command args words i preprocessed key_input=$TIDY_BASE_KEY
  # Every compile command of the file, each as its directory and then the shell-quoted command.
  entries=$(jq -r --arg f "$root/$file" '
    .[] | select((if (.file | startswith("/")) then .file else .directory + "/" + .file end) == $f)
    | .directory, (.command // (.arguments | map(@sh) | join(" ")))' \
    "$build/compile_commands.json")
  [ -n "$entries" ] || return 1
  while IFS= read -r dir && IFS= read -r command; do
    eval "args=($command)"  # the database quotes for a POSIX shell
    words=()
    for ((i = 0; i < ${#args[@]}; i++)); do
      case ${args[i]} in
        -o | -MF | -MT | -MQ) ((i += 1)) ;;  # output paths: not inputs of the check
        -c | -MD | -MMD) ;;
        *) words+=("${args[i]}") ;;
      esac
    done
    preprocessed=$(cd "$dir" && "${words[@]}" -E 2>/dev/null | normalize | sha256sum) || return 1
    key_input+=$'\n'"$(printf '%q ' "$dir" "${words[@]}" | normalize)"$'\n'"$preprocessed"
  done <<<"$entries"
  printf '%s' "$key_input" | sha256sum | cut -d' ' -f1
}

# Runs clang-tidy; a clean result is stored under <key> when the key still holds afterwards
# (a header edited while clang-tidy ran must not make the older text look checked).
run_tidy() {  # run_tidy <key or empty>
  local out status=0 shown
  out=$(clang-tidy "${tidy_args[@]}" "$file" 2>&1) || status=$?
  shown=$(grep -v -E "$noise" <<<"$out" || true)
  [ -z "$shown" ] || printf '%s\n' "$shown"
  if [ "$status" -ne 0 ] || grep -q -E '(warning|error): ' <<<"$out"; then
    echo "@@tidy fail $file"
    return 1
  fi
  if [ -n "$1" ] && [ "$(cache_key || true)" = "$1" ]; then
    local entry="$TIDY_CACHE_DIR/${1:0:2}/$1"
    mkdir -p "${entry%/*}"
    # Written whole under a temporary name: a concurrent run never sees a partial entry.
    printf '%s\n' "$file" >"$entry.$$" && mv -f "$entry.$$" "$entry"
  fi
  echo "@@tidy ran $file"
}

if [ -z "${TIDY_CACHE_DIR:-}" ] || ! key=$(cache_key); then
  run_tidy ""
  exit
fi
entry="$TIDY_CACHE_DIR/${key:0:2}/$key"
if [ -f "$entry" ]; then
  touch "$entry"  # recently used entries survive lint.sh's pruning
  echo "@@tidy hit $file"
  exit 0
fi
run_tidy "$key"
