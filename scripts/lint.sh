#!/usr/bin/env bash
# Style checks: clang-format on every C/C++ file; clang-tidy (the .clang-tidy allowlist) on the
# host's and in-tree plugins' sources, and through them the SDK headers, unless --format-only.
# clang-tidy needs a configured build (compile_commands.json): cmake --preset dev.
#   scripts/lint.sh                        # both, clang-tidy on every file (the full check)
#   scripts/lint.sh --format-only          # clang-format only
#   scripts/lint.sh --tidy-only            # clang-tidy only
#   TIDY_SINCE=<git ref> scripts/lint.sh   # clang-tidy only on sources changed since the
#                                          # branch left <ref>, and on sources whose build
#                                          # includes a header changed since then
#   scripts/lint.sh --clean-baseline       # prints the newest commit known to be clang-tidy
#                                          # clean: this machine's last clean scripts/test.sh
#                                          # run, else .ci/tidy-clean-at (scripts/test.sh
#                                          # checks what changed since it; docs/adr/0020)
#   scripts/lint.sh --record-clean <sha>   # remembers <sha> as this machine's clean baseline
set -euo pipefail
cd "$(dirname "$0")/.."
state_dir=${XDG_CACHE_HOME:-$HOME/.cache}/banlieue
case ${1:-} in
  --clean-baseline)
    committed=$(git rev-parse --verify -q "$(tr -d '[:space:]' <.ci/tidy-clean-at)^{commit}" || true)
    recorded=$(git rev-parse --verify -q "$(cat "$state_dir/tidy-clean-at" 2>/dev/null)^{commit}" || true)
    # The machine's record counts only when it is this history's: newer than the committed one.
    if [ -n "$recorded" ] && { [ -z "$committed" ] || git merge-base --is-ancestor "$committed" "$recorded"; } &&
       git merge-base --is-ancestor "$recorded" HEAD; then
      echo "$recorded"
    elif [ -n "$committed" ]; then
      echo "$committed"
    else
      # No known clean commit in this clone: the root commit makes every file count as changed.
      git rev-list --max-parents=0 HEAD | tail -n1
    fi
    exit 0
    ;;
  --record-clean)
    mkdir -p "$state_dir"
    echo "$2" >"$state_dir/tidy-clean-at"
    exit 0
    ;;
esac
if [ "${1:-}" != "--tidy-only" ]; then
  files=$(git ls-files --cached --others --exclude-standard -- '*.h' '*.cc' | grep -v '^build/' || true)
  if [ -n "$files" ]; then
    # shellcheck disable=SC2086
    clang-format --dry-run -Werror $files
  fi
  echo "lint: clang-format clean ($(echo "$files" | wc -w) files)"
  [ "${1:-}" = "--format-only" ] && exit 0
fi

build=${BUILD_DIR:-build/dev}
[ -f "$build/compile_commands.json" ] || { echo "lint: configure first (cmake --preset dev)" >&2; exit 1; }
sources=$(git ls-files --cached --others --exclude-standard -- 'host/*.cc' 'plugins/*.cc')
if [ -n "${TIDY_SINCE:-}" ]; then
  # Against the merge base: what this branch changed, not what <ref> gained since it forked.
  changed=$( (git diff --name-only "$(git merge-base "$TIDY_SINCE" HEAD)" -- 'host/*.cc' 'plugins/*.cc';
              git ls-files --others --exclude-standard -- 'host/*.cc' 'plugins/*.cc') | sort -u)
  # A changed header changes what clang-tidy says about every source that includes it, at any
  # depth: ninja's dependency log of the build knows which ones (objects named in
  # compile_commands.json's "output").
  headers=$( (git diff --name-only "$(git merge-base "$TIDY_SINCE" HEAD)" -- '*.h';
              git ls-files --others --exclude-standard -- '*.h') | sort -u)
  if [ -n "$headers" ] && [ -f "$build/.ninja_deps" ]; then
    # Dependency paths are absolute, or relative to the build directory where ccache rewrote
    # them (base_dir): both are reduced to the repository-relative path.
    objects=$(ninja -C "$build" -t deps 2>/dev/null | awk -v list="$headers" -v root="$PWD/" '
      BEGIN { n = split(list, h, "\n"); for (i = 1; i <= n; i++) changed[h[i]] = 1 }
      /^[^ ].*: #deps/ { object = $1; sub(/:$/, "", object); next }
      /^    / {
        path = $1
        if (index(path, root) == 1) path = substr(path, length(root) + 1)
        while (sub(/^\.\.\//, "", path)) {}
        if (path in changed) print object
      }' | sort -u)
    if [ -n "$objects" ]; then
      changed+=$'\n'$(jq -r --arg root "$PWD/" --arg objects "$objects" '
        ($objects | split("\n")) as $o | .[] | select(.output as $out | $o | index($out))
        | .file | ltrimstr($root)' "$build/compile_commands.json")
    fi
  fi
  # A changed configuration changes what clang-tidy says about every file.
  if [ -z "$(git diff --name-only "$(git merge-base "$TIDY_SINCE" HEAD)" -- .clang-tidy '*/.clang-tidy')" ]; then
    sources=$(comm -12 <(printf '%s\n' $sources | sort) <(printf '%s\n' $changed | sort -u))
  fi
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
