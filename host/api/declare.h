// What a kind's source file needs to declare its fields: the field machinery, the shared
// types, and the Resource<Spec, Status> envelope. Included only by host/api sources.
#pragma once

#include "host/api/common.h"
#include "host/api/fields.h"
#include "host/api/kinds.h"

namespace banlieue::api {

template <>
struct Codec<Quantity> {
  static void encode(const Quantity& v, Json& out, Alloc& a) { out = stringValue(v.value, a); }
  static Status decode(const Json& in, Quantity& v, const std::string& path) {
    if (in.IsString()) {
      v.value.assign(in.GetString(), in.GetStringLength());
    } else if (in.IsInt64()) {
      v.value = std::to_string(in.GetInt64());
    } else if (in.IsNumber()) {
      v.value = serializeJson(in);
    } else {
      return typeError(path, "a quantity (a number or a string such as \"500m\" or \"1Gi\")");
    }
    return Status::ok();
  }
  // Kubernetes' own int-or-string shape, which structural schemas allow.
  static void schema(Json& out, Alloc& a) {
    out.SetObject();
    Json any(rapidjson::kArrayType);
    Json integer(rapidjson::kObjectType);
    integer.AddMember("type", "integer", a);
    Json string(rapidjson::kObjectType);
    string.AddMember("type", "string", a);
    any.PushBack(integer, a);
    any.PushBack(string, a);
    out.AddMember("anyOf", any, a);
    out.AddMember("x-kubernetes-int-or-string", true, a);
  }
};

template <class SpecT, class StatusT>
const Fields<Resource<SpecT, StatusT>>& Resource<SpecT, StatusT>::describe() {
  using R = Resource<SpecT, StatusT>;
  static const Fields<R> fields =
      Fields<R>()
          .field("apiVersion", &R::api_version)
          .field("kind", &R::kind)
          .field("metadata", &R::metadata)
          // Required when it has required fields (an absent spec could not hold them; the
          // CRDs of those kinds require spec too).
          .field("spec", &R::spec, {.required = SpecT::describe().hasRequired()})
          .field("status", &R::status);
  return fields;
}

// Explicit instantiations of codec.h's templates for one kind.
#define BANLIEUE_API_CODEC(T)               \
  template std::string toJson<T>(const T&); \
  template StatusOr<T> fromJson<T>(std::string_view)

// Condition lists are maps keyed on type so several writers can each own their conditions.
inline FieldSpec conditionsSpec(const char* description = "Observations of the object's state") {
  return {.description = description, .map_keys = {"type"}};
}

}  // namespace banlieue::api
