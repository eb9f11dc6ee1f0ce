#include "host/api/fields.h"

#include <banlieue/sdk/json.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace banlieue::api {

std::string joinPath(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}

std::string indexPath(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

Status typeError(const std::string& path, const char* expected) {
  return error(Code::kInvalidArgument, "FieldInvalid",
               (path.empty() ? std::string("the object") : path) + ": must be " + expected);
}

namespace {

std::string listOf(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "\"" : ", \"") + v + "\"";
  return out;
}

Status invalid(const std::string& path, const std::string& what) {
  return error(Code::kInvalidArgument, "FieldInvalid", path + ": " + what);
}

}  // namespace

Status checkConstraints(const Json& value, const FieldSpec& spec, const std::string& path) {
  if (!spec.enum_values.empty() && value.IsString()) {
    std::string_view v(value.GetString(), value.GetStringLength());
    bool known = false;
    for (const auto& e : spec.enum_values) known = known || e == v;
    if (!known) {
      return invalid(path, "Unsupported value: \"" + std::string(v) +
                               "\": supported values: " + listOf(spec.enum_values));
    }
  }
  if (value.IsInt64()) {
    int64_t v = value.GetInt64();
    if (spec.minimum && v < *spec.minimum) {
      return invalid(path, "Invalid value: " + std::to_string(v) +
                               ": must be greater than or equal to " +
                               std::to_string(*spec.minimum));
    }
    if (spec.maximum && v > *spec.maximum) {
      return invalid(path, "Invalid value: " + std::to_string(v) +
                               ": must be less than or equal to " + std::to_string(*spec.maximum));
    }
  }
  if (value.IsArray()) {
    auto n = static_cast<int64_t>(value.Size());
    if (spec.min_items && n < *spec.min_items) {
      return invalid(path, "must have at least " + std::to_string(*spec.min_items) + " items");
    }
    if (spec.max_items && n > *spec.max_items) {
      return invalid(path, "must have at most " + std::to_string(*spec.max_items) + " items");
    }
  }
  if (value.IsString() && spec.min_length &&
      static_cast<int64_t>(value.GetStringLength()) < *spec.min_length) {
    return invalid(path,
                   "must be at least " + std::to_string(*spec.min_length) + " characters long");
  }
  if (value.IsString() && spec.max_length &&
      static_cast<int64_t>(value.GetStringLength()) > *spec.max_length) {
    return invalid(path, "may not be longer than " + std::to_string(*spec.max_length));
  }
  return Status::ok();
}

bool isEmptyJson(const Json& value) {
  switch (value.GetType()) {
    case rapidjson::kNullType:
    case rapidjson::kFalseType: return true;
    case rapidjson::kStringType: return value.GetStringLength() == 0;
    case rapidjson::kNumberType:
      return value.IsInt64() ? value.GetInt64() == 0 : value.GetDouble() == 0.0;
    case rapidjson::kArrayType: return value.Empty();
    case rapidjson::kObjectType: return value.ObjectEmpty();
    default: return false;
  }
}

Json stringValue(const std::string& s, Alloc& alloc) {
  return Json(s.data(), static_cast<rapidjson::SizeType>(s.size()), alloc);
}

void applySpecToSchema(const FieldSpec& spec, Json& schema, Alloc& a) {
  if (spec.nullable && !schema.HasMember("nullable")) schema.AddMember("nullable", true, a);
  // A field's own description wins over its type's.
  if (*spec.description != '\0') {
    schema.RemoveMember("description");
    schema.AddMember("description", Json(spec.description, a), a);
  }
  if (!spec.enum_values.empty()) {
    Json values(rapidjson::kArrayType);
    for (const auto& e : spec.enum_values) values.PushBack(stringValue(e, a), a);
    schema.AddMember("enum", values, a);
  }
  if (spec.minimum) schema.AddMember("minimum", *spec.minimum, a);
  if (spec.maximum) schema.AddMember("maximum", *spec.maximum, a);
  if (spec.min_items) schema.AddMember("minItems", *spec.min_items, a);
  if (spec.max_items) schema.AddMember("maxItems", *spec.max_items, a);
  if (spec.min_length) schema.AddMember("minLength", *spec.min_length, a);
  if (spec.max_length) schema.AddMember("maxLength", *spec.max_length, a);
  if (spec.format != nullptr) {
    schema.RemoveMember("format");
    schema.AddMember("format", Json(spec.format, a), a);
  }
  if (spec.pattern != nullptr) schema.AddMember("pattern", Json(spec.pattern, a), a);
  if (spec.default_json != nullptr) {
    rapidjson::Document d;
    d.Parse(spec.default_json);
    Json copy(d, a);
    schema.AddMember("default", copy, a);
  }
  if (!spec.map_keys.empty()) {
    schema.AddMember("x-kubernetes-list-type", "map", a);
    Json keys(rapidjson::kArrayType);
    for (const auto& k : spec.map_keys) keys.PushBack(stringValue(k, a), a);
    schema.AddMember("x-kubernetes-list-map-keys", keys, a);
  } else if (spec.set) {
    schema.AddMember("x-kubernetes-list-type", "set", a);
  }
}

Status parseJson(std::string_view text, rapidjson::Document& doc) {
  if (sdk::json::nestsDeeperThan(text)) {
    return error(
        Code::kInvalidArgument, "InvalidJson",
        "not valid JSON: it nests deeper than " + std::to_string(sdk::json::kMaxDepth) + " levels");
  }
  std::string copy(text);
  doc.Parse(copy.c_str(), copy.size());
  if (doc.HasParseError()) {
    return error(Code::kInvalidArgument, "InvalidJson",
                 std::string("not valid JSON: ") +
                     rapidjson::GetParseError_En(doc.GetParseError()) + " at offset " +
                     std::to_string(doc.GetErrorOffset()));
  }
  return Status::ok();
}

std::string serializeJson(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return {buffer.GetString(), buffer.GetSize()};
}

}  // namespace banlieue::api
