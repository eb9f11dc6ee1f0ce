#!/usr/bin/env bash
# scripts/lint.sh's clang-tidy result cache on a two-file fixture repository: a second run is
# served from the cache, and a changed header, config, compile flag or finding re-runs exactly
# the files it can affect; a moved clone still hits; findings are never cached.
#   lint_cache_test.sh <source dir>
set -uo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
export TIDY_CACHE_DIR=$tmp/cache
unset TIDY_SINCE TIDY_CACHE BUILD_DIR

make_repo() {  # make_repo <dir>: scripts, configs and sources; util.h is included by a.cc only
  local repo=$1
  mkdir -p "$repo/scripts" "$repo/host" "$repo/build/dev"
  cp "$src/scripts/lint.sh" "$src/scripts/clang_tidy_cached.sh" "$repo/scripts/"
  cp "$src/.clang-format" "$repo/"
  cat >"$repo/.clang-tidy" <<'EOF'
Checks: '-*,bugprone-*,readability-identifier-naming'
WarningsAsErrors: '*'
HeaderFilterRegex: '/host/'
CheckOptions:
  - { key: readability-identifier-naming.FunctionCase, value: camelBack }
EOF
  header "twice" "2 * v"
  printf '#include "host/util.h"\n\nint callTwice() {\n  return twice(21);\n}\n' >"$repo/host/a.cc"
  printf 'int answer() {\n  return 42;\n}\n' >"$repo/host/b.cc"
  git -C "$repo" init -q
  compile_db "$repo" ""
}

header() {  # header <function name> <expression of v>: writes host/util.h of $repo
  printf '#pragma once\n\ninline int %s(int v) {\n  return %s;\n}\n' "$1" "$2" >"$repo/host/util.h"
}

compile_db() {  # compile_db <repo> <extra flags for b.cc>
  local repo=$1 extra=$2
  cat >"$repo/build/dev/compile_commands.json" <<EOF
[
{ "directory": "$repo/build/dev",
  "command": "/usr/bin/c++ -I$repo -std=c++20 -o a.o -c $repo/host/a.cc",
  "file": "$repo/host/a.cc", "output": "a.o" },
{ "directory": "$repo/build/dev",
  "command": "/usr/bin/c++ -I$repo -std=c++20 $extra -o b.o -c $repo/host/b.cc",
  "file": "$repo/host/b.cc", "output": "b.o" }
]
EOF
}

# check <what> <repo> <exit code> <text the output must contain>
check() {
  local what=$1 repo=$2 want=$3 text=$4
  local out got=0
  out=$("$repo/scripts/lint.sh" 2>&1) || got=$?
  if [ "$got" -ne "$want" ] || [[ "$out" != *"$text"* ]]; then
    echo "FAIL $what: exit $got (want $want), want '$text' in:"
    sed 's/^/    /' <<<"$out" | head -n 30
    fail=1
  else
    echo "ok   $what"
  fi
}

repo=$tmp/one/repo
make_repo "$repo"
check "first run checks both files" "$repo" 0 "2 files checked, 0 unchanged"
check "second run is served from the cache" "$repo" 0 "0 files checked, 2 unchanged"

header "twice" "v + v"
check "a changed header re-runs the file including it" "$repo" 0 "1 files checked, 1 unchanged"

header "twice" "v + v"
printf '\ninline int Twice_Bad(int v) {\n  return v;\n}\n' >>"$repo/host/util.h"
check "a finding in the header fails" "$repo" 1 "invalid case style for function 'Twice_Bad'"
check "a finding is not cached" "$repo" 1 "lint: clang-tidy found problems in: host/a.cc"

header "twice" "v + v"
check "back to the clean header: its clean result is still cached" "$repo" 0 \
  "0 files checked, 2 unchanged"

compile_db "$repo" "-DANSWER_FLAG=1"
check "a changed compile flag re-runs that file only" "$repo" 0 "1 files checked, 1 unchanged"

echo "  - { key: readability-identifier-naming.VariableCase, value: lower_case }" >>"$repo/.clang-tidy"
check "a changed .clang-tidy re-runs every file" "$repo" 0 "2 files checked, 0 unchanged"

# The same sources at another path (a fresh CI clone, another worktree) share the entries.
moved=$tmp/two/elsewhere
mkdir -p "$moved"
cp -a "$repo/." "$moved/"
compile_db "$moved" "-DANSWER_FLAG=1"
check "a clone at another path hits the cache" "$moved" 0 "0 files checked, 2 unchanged"

TIDY_CACHE=0 check "TIDY_CACHE=0 checks every file" "$repo" 0 "2 files checked, 0 unchanged"
# TIDY_SINCE (what scripts/test.sh runs in CI, from the last clean commit): the sources changed
# since <ref>, and those whose build includes a header changed since then - ninja's dependency
# log of the build says which.
since=$tmp/three/since
make_repo "$since"
cat >"$since/build/dev/build.ninja" <<EOF
rule cxx
  command = /usr/bin/c++ -I$since -std=c++20 -MD -MF \$out.d -o \$out -c \$in
  depfile = \$out.d
  deps = gcc
build a.o: cxx $since/host/a.cc
build b.o: cxx $since/host/b.cc
EOF
ninja -C "$since/build/dev" >/dev/null || { echo "FAIL the fixture's ninja build"; fail=1; }
printf 'build/\n' >"$since/.gitignore"
git -C "$since" add -A
git -C "$since" -c user.name=fixture -c user.email=fixture@localhost commit -qm clean
export TIDY_CACHE=0
TIDY_SINCE=HEAD check "nothing changed: nothing to check" "$since" 0 "0 files checked"
repo=$since header "twice" "v * 2"
TIDY_SINCE=HEAD check "a changed header: the source including it" "$since" 0 \
  "clang-tidy on 1 files changed since HEAD"
git -C "$since" checkout -q -- host/util.h
printf '\nint other() {\n  return 1;\n}\n' >>"$since/host/b.cc"
TIDY_SINCE=HEAD check "a changed source: that source" "$since" 0 \
  "clang-tidy on 1 files changed since HEAD"
git -C "$since" checkout -q -- host/b.cc
echo "  - { key: readability-identifier-naming.VariableCase, value: lower_case }" >>"$since/.clang-tidy"
TIDY_SINCE=HEAD check "a changed .clang-tidy: every source" "$since" 0 \
  "clang-tidy on 2 files changed since HEAD"
unset TIDY_CACHE
exit $fail
