# One helper per kind of target. Flags are set per target; CMAKE_CXX_FLAGS is never edited.

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

# banlieue_cc_test(NAME SRCS ... [DEPS ...] LABELS unit|abi|integration|e2e ...)
# Every test carries its tier label; tests of one issue may carry an extra label (e.g. abi).
function(banlieue_cc_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SRCS;DEPS;LABELS;ENVIRONMENT" ${ARGN})
  if(NOT ARG_LABELS)
    message(FATAL_ERROR "banlieue_cc_test(${name}) needs LABELS (unit, abi, integration or e2e)")
  endif()
  add_executable(${name} ${ARG_SRCS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  banlieue_target_defaults(${name})
  gtest_discover_tests(${name}
    PROPERTIES LABELS "${ARG_LABELS}" ENVIRONMENT "${ARG_ENVIRONMENT}"
    DISCOVERY_TIMEOUT 60)
endfunction()
