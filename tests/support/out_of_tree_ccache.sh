# Sourced by the tests that build a plugin out of the tree the way a third party does
# (tests/abi/example_plugin_test.sh, tests/thirdparty/build_qemu_example.sh).
# out_of_tree_ccache <work dir>: prints the CMake arguments (one a line) that put ccache in
# front of the compilers, keyed on paths relative to <work dir> (its sources, the SDK prefix and
# the build all live under it), so a run in another temporary directory or clone reuses the
# objects: the compiles were most of these tests' time in every CI run. Prints nothing without
# ccache. The build itself is the third party's: same sources, flags and warnings (ccache
# replays a cached compile's warnings).
out_of_tree_ccache() {
  command -v ccache >/dev/null || return 0
  local launcher="env;CCACHE_BASEDIR=$1;CCACHE_NOHASHDIR=true;ccache"
  printf '%s\n' "-DCMAKE_C_COMPILER_LAUNCHER=$launcher" "-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher"
}
