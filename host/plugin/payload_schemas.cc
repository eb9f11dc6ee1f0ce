#include "host/plugin/payload_schemas.h"

#include "host/plugin/payload_schemas_data.h"  // generated from sdk/schemas/ by CMake

#include <banlieue/sdk/json.h>
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/schema.h>
#include <rapidjson/stringbuffer.h>

#include <map>
#include <memory>
#include <mutex>

namespace banlieue::plugin {
namespace {

const std::map<std::string_view, std::unique_ptr<rapidjson::SchemaDocument>>& compiled() {
  static const auto* schemas = [] {
    auto* map = new std::map<std::string_view, std::unique_ptr<rapidjson::SchemaDocument>>();
    for (const auto& entry : kPayloadSchemas) {
      rapidjson::Document doc;
      doc.Parse(entry.text.data(), entry.text.size());
      if (!doc.HasParseError())
        (*map)[entry.name] = std::make_unique<rapidjson::SchemaDocument>(doc);
    }
    return map;
  }();
  return *schemas;
}

// For a 'required' violation, the members the object lacks: this rapidjson names only the
// keyword, and "# violates 'required'" does not tell a plugin author what to add.
std::string missingMembers(std::string_view schema_name, const rapidjson::Pointer& at_schema,
                           const rapidjson::Value* object) {
  if (object == nullptr || !object->IsObject()) return {};
  for (const auto& entry : kPayloadSchemas) {
    if (entry.name != schema_name) continue;
    rapidjson::Document schema;
    schema.Parse(entry.text.data(), entry.text.size());
    const rapidjson::Value* node = schema.HasParseError() ? nullptr : at_schema.Get(schema);
    if (node == nullptr || !node->IsObject() || !node->HasMember("required") ||
        !(*node)["required"].IsArray()) {
      return {};
    }
    std::string missing;
    for (const auto& name : (*node)["required"].GetArray()) {
      if (name.IsString() && !object->HasMember(name)) {
        missing += (missing.empty() ? "" : ", ") + std::string(name.GetString());
      }
    }
    return missing;
  }
  return {};
}

}  // namespace

std::vector<std::string_view> payloadSchemaNames() {
  std::vector<std::string_view> names;
  for (const auto& entry : kPayloadSchemas) names.push_back(entry.name);
  return names;
}

Status validatePayload(std::string_view schema_name, std::string_view document) {
  const auto& schemas = compiled();
  auto it = schemas.find(schema_name);
  if (it == schemas.end()) {
    return error(Code::kInternal, "UnknownSchema",
                 "no payload schema named " + std::string(schema_name));
  }
  if (sdk::json::nestsDeeperThan(document)) {
    return error(Code::kInvalidArgument, "InvalidJson",
                 std::string(schema_name) + ": not valid JSON: it nests deeper than " +
                     std::to_string(sdk::json::kMaxDepth) + " levels");
  }
  rapidjson::Document doc;
  doc.Parse(document.data(), document.size());
  if (doc.HasParseError()) {
    return error(Code::kInvalidArgument, "InvalidJson",
                 std::string(schema_name) +
                     ": not valid JSON: " + rapidjson::GetParseError_En(doc.GetParseError()) +
                     " at offset " + std::to_string(doc.GetErrorOffset()));
  }
  rapidjson::SchemaValidator validator(*it->second);
  if (!doc.Accept(validator)) {
    rapidjson::StringBuffer pointer;
    validator.GetInvalidDocumentPointer().StringifyUriFragment(pointer);
    std::string keyword = validator.GetInvalidSchemaKeyword();
    std::string detail;
    if (keyword == "required") {
      std::string missing = missingMembers(schema_name, validator.GetInvalidSchemaPointer(),
                                           validator.GetInvalidDocumentPointer().Get(doc));
      if (!missing.empty()) detail = " (missing: " + missing + ")";
    }
    return error(Code::kInvalidArgument, "SchemaViolation",
                 std::string(schema_name) + ": " + pointer.GetString() + " violates '" + keyword +
                     "'" + detail);
  }
  return Status::ok();
}

}  // namespace banlieue::plugin
