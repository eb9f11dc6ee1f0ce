# banlieue_provider_plugin(<target> SOURCES ...)
#
# Builds a provider plugin the way the host expects: a MODULE library with hidden
# visibility, a linker version script that exports only banlieue_provider_v1_init, and
# -Wl,--no-undefined so a missing symbol fails the link instead of the dlopen. Shipped in
# the SDK's CMake package so out-of-tree plugins get exactly the same rules.
set(_BANLIEUE_PLUGIN_MODULE_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(banlieue_provider_plugin target)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  set(script "${_BANLIEUE_PLUGIN_MODULE_DIR}/banlieue_provider_v1.map")
  target_link_options(${target} PRIVATE
    "-Wl,--version-script=${script}" "-Wl,--no-undefined")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${script}")
  if(NOT TARGET banlieue::sdk)
    message(FATAL_ERROR "banlieue_provider_plugin(${target}): find_package(banlieue-sdk) first")
  endif()
  target_link_libraries(${target} PRIVATE banlieue::sdk)
endfunction()
