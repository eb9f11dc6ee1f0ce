# Writes a header with every sdk/schemas/*.json as a raw string, so the host validates
# payloads without reading files at run time. Run by CMake at build time.
file(GLOB schema_files "${SCHEMA_DIR}/*.json")
list(SORT schema_files)
set(out "// Generated from sdk/schemas/ by host/plugin/embed_schemas.cmake; do not edit.\n#pragma once\n#include <string_view>\nnamespace banlieue::plugin {\nstruct EmbeddedSchema { std::string_view name; std::string_view text; };\ninline constexpr EmbeddedSchema kPayloadSchemas[] = {\n")
foreach(f IN LISTS schema_files)
  get_filename_component(name "${f}" NAME)
  string(REGEX REPLACE "\\.json$" "" name "${name}")
  file(READ "${f}" text)
  string(APPEND out "  {\"${name}\", R\"banlieue_schema(${text})banlieue_schema\"},\n")
endforeach()
string(APPEND out "};\n}  // namespace banlieue::plugin\n")
file(WRITE "${OUTPUT}.tmp" "${out}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
