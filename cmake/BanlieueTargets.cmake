# One helper per kind of target. Flags are set per target; CMAKE_CXX_FLAGS is never edited.

# The exit code of a test binary that skipped a test and failed none (tests/support/gtest_main.cc):
# every test's SKIP_RETURN_CODE, and the only way a test is reported skipped.
set(BANLIEUE_SKIPPED_EXIT_CODE 77)

# Warnings and sanitizers every banlieue target gets.
function(banlieue_target_defaults target)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    return()
  endif()
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter
    -Wno-missing-field-initializers)  # designated initializers leave the rest defaulted on purpose
  # cpprestsdk's U() macro clashes with fmt and gtest; see DESIGN.md section 5.
  target_compile_definitions(${target} PRIVATE _TURN_OFF_PLATFORM_STRING)
  if(BANLIEUE_SANITIZERS)
    target_compile_options(${target} PRIVATE -fsanitize=${BANLIEUE_SANITIZERS} -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=${BANLIEUE_SANITIZERS})
    if(BANLIEUE_SANITIZERS_EXCEPT)
      target_compile_options(${target} PRIVATE -fno-sanitize=${BANLIEUE_SANITIZERS_EXCEPT})
      target_link_options(${target} PRIVATE -fno-sanitize=${BANLIEUE_SANITIZERS_EXCEPT})
    endif()
    # clang links its sanitizer runtimes into executables only: a plugin's references to them
    # are resolved by the host binary that loads it, so `--no-undefined` (which
    # banlieue_provider_plugin sets) cannot hold for a sanitized plugin.
    if(CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND type MATCHES "^(MODULE|SHARED)_LIBRARY$")
      target_link_options(${target} PRIVATE -Wl,-z,undefs)
    endif()
  endif()
  # Coverage for libFuzzer in the libraries fuzz targets link (banlieue_fuzz_target adds it to
  # its own source); optimised a little (-O1, as libFuzzer's docs advise) while Debug keeps
  # assertions. Not in executables: the ~200 test sources gain nothing from it, and the ci-asan
  # build and its unit tier paid for it in compile and run time.
  if(BANLIEUE_FUZZ AND NOT type STREQUAL "EXECUTABLE")
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
    if(BANLIEUE_FUZZ_OPTIMIZE)
      target_compile_options(${target} PRIVATE -O1)
    endif()
  endif()
endfunction()

# banlieue_cc_library(NAME SRCS ... [DEPS ...] [PUBLIC_DEPS ...])
function(banlieue_cc_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_DEPS})
  banlieue_target_defaults(${name})
endfunction()

# banlieue_cc_binary(NAME SRCS ... [DEPS ...])
function(banlieue_cc_binary name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  banlieue_target_defaults(${name})
endfunction()

# banlieue_cc_test(NAME SRCS ... [DEPS ...] LABELS unit|abi|integration|e2e ...
#                  [ENVIRONMENT VAR=value ...] [FIXTURES <ctest fixture> ...]
#                  [RESOURCE_LOCK <lock> ...])
# Every test carries its tier label first; tests of one issue may carry an extra label (abi,
# local-cluster). FIXTURES names CTest fixtures (e.g. local_cluster) each test requires;
# RESOURCE_LOCK names what the test must hold alone (several locks: several words).
function(banlieue_cc_test name)
  # LABEL_TESTS "label:regex" ...: a binary mixing cases of several issues labels the cases
  # one issue added (e.g. `chaos`).
  cmake_parse_arguments(ARG "" "TIMEOUT"
    "SRCS;DEPS;LABELS;ENVIRONMENT;FIXTURES;RESOURCE_LOCK;LABEL_TESTS" ${ARGN})
  if(NOT ARG_LABELS)
    message(FATAL_ERROR "banlieue_cc_test(${name}) needs LABELS (unit, abi, integration or e2e)")
  endif()
  # A build limited to some tiers (BANLIEUE_TEST_TIERS, e.g. the sanitizer builds of
  # scripts/test.sh) keeps the other tiers' test binaries out of `all` and out of CTest.
  list(GET ARG_LABELS 0 tier)
  set(in_tiers TRUE)
  if(BANLIEUE_TEST_TIERS AND NOT tier IN_LIST BANLIEUE_TEST_TIERS)
    set(in_tiers FALSE)
  endif()
  if(in_tiers)
    add_executable(${name} ${ARG_SRCS})
  else()
    add_executable(${name} EXCLUDE_FROM_ALL ${ARG_SRCS})
  endif()
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock banlieue_gtest_main)
  # Where the build's binaries are (tests/support/build_paths.h; tests/support comes first).
  if(TARGET banlieue_build_paths)
    target_link_libraries(${name} PRIVATE banlieue_build_paths)
  endif()
  banlieue_target_defaults(${name})
  if(NOT in_tiers)
    return()
  endif()
  # `tests-<label>` builds every test binary carrying that label (e.g. the TSan build builds
  # only `tests-threads`).
  foreach(label IN LISTS ARG_LABELS)
    if(NOT TARGET tests-${label})
      add_custom_target(tests-${label})
    endif()
    add_dependencies(tests-${label} ${name})
  endforeach()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
  # CTest reads gtest's list of discovered tests through a script of our own instead of gtest's
  # include file, for two reasons:
  # - A skip is what the test's exit code says (tests/support/gtest_main.cc), never a "[  SKIPPED
  #   ]" in its output: gtest_discover_tests gives every test that regular expression, which
  #   also matches the tests a failed SetUpTestSuite skips and made CTest report them skipped
  #   instead of failed. CTest only adds to a test's skip expressions, so the script removes it
  #   from the list before CTest reads it (and fails loudly if gtest's text ever changes).
  # - Properties: gtest_discover_tests(PROPERTIES) flattens list values (CMake 3.25), so a
  #   second label would become a property name.
  get_property(include_files DIRECTORY PROPERTY TEST_INCLUDE_FILES)
  list(POP_BACK include_files gtest_include_file)
  set_property(DIRECTORY PROPERTY TEST_INCLUDE_FILES ${include_files})
  string(REPLACE "_include.cmake" "_tests.cmake" gtest_tests_file "${gtest_include_file}")
  # Every case has a time limit, so a hang fails with its name instead of holding the whole
  # run until CI's own limit kills it without one (CTest's default is none): TIMEOUT when
  # given, else the tier's. The limits are several times the slowest case seen under ASan on a
  # loaded 2-core machine (unit 8 s, abi 40 s, integration 90 s).
  if(ARG_TIMEOUT)
    set(timeout ${ARG_TIMEOUT})
  elseif(tier STREQUAL "unit")
    set(timeout 120)
  elseif(tier STREQUAL "abi")
    set(timeout 300)
  else()
    set(timeout 600)
  endif()
  set(assignments
    "LABELS \"\${labels}\" SKIP_RETURN_CODE ${BANLIEUE_SKIPPED_EXIT_CODE} TIMEOUT ${timeout}")
  # LABEL_TESTS: one more label for the tests whose name matches; a pattern matching no test
  # (a renamed test) adds a test that fails, so a label is never dropped silently.
  set(extra_labels "")
  set(unmatched_checks "")
  set(match_resets "")  # every binary's script runs in the one scope of its CTestTestfile
  set(index 0)
  foreach(pair IN LISTS ARG_LABEL_TESTS)
    if(NOT pair MATCHES "^([^:]+):(.+)$")
      message(FATAL_ERROR "banlieue_cc_test(${name}): LABEL_TESTS wants \"label:regex\", got ${pair}")
    endif()
    string(APPEND extra_labels
      "  if(test MATCHES [==[${CMAKE_MATCH_2}]==])\n"
      "    list(APPEND labels [==[${CMAKE_MATCH_1}]==])\n"
      "    set(matched_${index} TRUE)\n"
      "  endif()\n")
    string(APPEND match_resets "set(matched_${index} FALSE)\n")
    string(APPEND unmatched_checks
      "if(NOT matched_${index})\n"
      "  add_test(${name}_LABEL_TESTS_${index}_MATCHES_NOTHING ${name}_LABEL_TESTS_${index}_MATCHES_NOTHING)\n"
      "  set_tests_properties(${name}_LABEL_TESTS_${index}_MATCHES_NOTHING PROPERTIES LABELS [==[${ARG_LABELS}]==])\n"
      "endif()\n")
    math(EXPR index "${index} + 1")
  endforeach()
  if(ARG_ENVIRONMENT)
    string(APPEND assignments " ENVIRONMENT [==[${ARG_ENVIRONMENT}]==]")
  endif()
  if(ARG_FIXTURES)
    string(APPEND assignments " FIXTURES_REQUIRED [==[${ARG_FIXTURES}]==]")
  endif()
  # Tests sharing cluster-wide state (e.g. the operator's Lease) never run at the same time.
  if(ARG_RESOURCE_LOCK)
    string(APPEND assignments " RESOURCE_LOCK [==[${ARG_RESOURCE_LOCK}]==]")
  endif()
  set(script ${CMAKE_CURRENT_BINARY_DIR}/${name}_properties.cmake)
  file(WRITE ${script}
    "if(NOT EXISTS [==[${gtest_tests_file}]==])\n"
    "  add_test(${name}_NOT_BUILT ${name}_NOT_BUILT)\n"
    "  return()\n"
    "endif()\n"
    "file(READ [==[${gtest_tests_file}]==] discovered)\n"
    "string(REPLACE [===[SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==]]===] \"\" discovered \"\${discovered}\")\n"
    "if(discovered MATCHES SKIP_REGULAR_EXPRESSION)\n"
    "  add_test(${name}_KEEPS_A_SKIP_EXPRESSION ${name}_KEEPS_A_SKIP_EXPRESSION)\n"
    "endif()\n"
    "cmake_language(EVAL CODE \"\${discovered}\")\n"
    "${match_resets}"
    "foreach(test IN LISTS ${name}_TESTS)\n"
    "  set(labels [==[${ARG_LABELS}]==])\n"
    "${extra_labels}"
    "  set_tests_properties(\"\${test}\" PROPERTIES ${assignments})\n"
    "endforeach()\n"
    "${unmatched_checks}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${script})
endfunction()
