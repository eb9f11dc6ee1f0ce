// The one declaration every API type makes: its fields, each with name, JSON type (from the C++
// member type), constraints, default and description. The JSON codec and the OpenAPI schema
// that crdgen emits are both derived from it, so the wire format and the CRD cannot drift.
//
// Only host/api sources include this (it pulls in RapidJSON); users of the types include the
// kind headers and codec.h.
#pragma once

#include "host/api/codec.h"

#include <rapidjson/document.h>

#include <concepts>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::api {

using Json = rapidjson::Value;
using Alloc = rapidjson::MemoryPoolAllocator<>;

// Constraints and documentation of one field. Designated initializers keep declarations short.
struct FieldSpec {
  const char* description = "";
  bool required = false;
  std::vector<std::string> enum_values;
  std::optional<int64_t> minimum;
  std::optional<int64_t> maximum;
  std::optional<int64_t> min_items;
  std::optional<int64_t> max_items;
  std::optional<int64_t> min_length;
  std::optional<int64_t> max_length;
  const char* default_json = nullptr;  // JSON text of the default, applied on decode too
  std::vector<std::string> map_keys;   // non-empty: x-kubernetes-list-type map with these keys
  bool set = false;                    // x-kubernetes-list-type set (scalars, unique)
  const char* format = nullptr;        // OpenAPI format, e.g. date-time
  const char* pattern = nullptr;       // ECMA regex the apiserver checks
  // Required by the schema, yet decoded as empty when missing: for fields the schema began to
  // require after objects without them could be stored (readers must not refuse those).
  bool lenient_decode = false;
  // Accepts null (read as absent): for an optional object of a status row that its writer drops
  // again by server-side apply, which a kube-apiserver of 1.20 stores as null (then refuses as
  // "must be of type object").
  bool nullable = false;
};

template <class T>
class Fields;

template <class T>
concept Described = requires {
  { T::describe() } -> std::same_as<const Fields<T>&>;
};

std::string joinPath(const std::string& path, const std::string& name);
std::string indexPath(const std::string& path, size_t index);
Status typeError(const std::string& path, const char* expected);
// The spec's constraints checked against a present value (enum, min/max, items, length).
Status checkConstraints(const Json& value, const FieldSpec& spec, const std::string& path);
// True for null, "", false, 0, [] and {}: what omit-when-empty leaves out.
bool isEmptyJson(const Json& value);
// Adds the spec's keywords to a property schema.
void applySpecToSchema(const FieldSpec& spec, Json& schema, Alloc& alloc);
Json stringValue(const std::string& s, Alloc& alloc);

// Codec<T>: encode to JSON, decode from JSON (tolerating unknown members), and the OpenAPI
// schema of T. Specialised below for scalars and containers; structs use their describe().
template <class T>
struct Codec;

template <>
struct Codec<std::string> {
  static void encode(const std::string& v, Json& out, Alloc& a) { out = stringValue(v, a); }
  static Status decode(const Json& in, std::string& v, const std::string& path) {
    if (!in.IsString()) return typeError(path, "a string");
    v.assign(in.GetString(), in.GetStringLength());
    return Status::ok();
  }
  static void schema(Json& out, Alloc& a) {
    out.SetObject();
    out.AddMember("type", "string", a);
  }
};

template <>
struct Codec<bool> {
  static void encode(bool v, Json& out, Alloc&) { out.SetBool(v); }
  static Status decode(const Json& in, bool& v, const std::string& path) {
    if (!in.IsBool()) return typeError(path, "a boolean");
    v = in.GetBool();
    return Status::ok();
  }
  static void schema(Json& out, Alloc& a) {
    out.SetObject();
    out.AddMember("type", "boolean", a);
  }
};

template <>
struct Codec<int32_t> {
  static void encode(int32_t v, Json& out, Alloc&) { out.SetInt(v); }
  static Status decode(const Json& in, int32_t& v, const std::string& path) {
    if (!in.IsInt()) return typeError(path, "a 32-bit integer");
    v = in.GetInt();
    return Status::ok();
  }
  static void schema(Json& out, Alloc& a) {
    out.SetObject();
    out.AddMember("type", "integer", a);
    out.AddMember("format", "int32", a);
  }
};

template <>
struct Codec<int64_t> {
  static void encode(int64_t v, Json& out, Alloc&) { out.SetInt64(v); }
  static Status decode(const Json& in, int64_t& v, const std::string& path) {
    if (!in.IsInt64()) return typeError(path, "an integer");
    v = in.GetInt64();
    return Status::ok();
  }
  static void schema(Json& out, Alloc& a) {
    out.SetObject();
    out.AddMember("type", "integer", a);
    out.AddMember("format", "int64", a);
  }
};

template <class T>
struct Codec<std::optional<T>> {
  static void encode(const std::optional<T>& v, Json& out, Alloc& a) {
    if (v) {
      Codec<T>::encode(*v, out, a);
    } else {
      out.SetNull();
    }
  }
  static Status decode(const Json& in, std::optional<T>& v, const std::string& path) {
    v.emplace();
    return Codec<T>::decode(in, *v, path);
  }
  static void schema(Json& out, Alloc& a) { Codec<T>::schema(out, a); }
};

template <class T>
struct Codec<std::vector<T>> {
  static void encode(const std::vector<T>& v, Json& out, Alloc& a) {
    out.SetArray();
    for (const auto& item : v) {
      Json j;
      Codec<T>::encode(item, j, a);
      out.PushBack(j, a);
    }
  }
  static Status decode(const Json& in, std::vector<T>& v, const std::string& path) {
    if (!in.IsArray()) return typeError(path, "a list");
    v.clear();
    v.resize(in.Size());
    for (rapidjson::SizeType i = 0; i < in.Size(); ++i) {
      if (auto s = Codec<T>::decode(in[i], v[i], indexPath(path, i)); !s.isOk()) return s;
    }
    return Status::ok();
  }
  static void schema(Json& out, Alloc& a) {
    out.SetObject();
    out.AddMember("type", "array", a);
    // A kube-apiserver of 1.20 (the local control plane's) stores a list whose last item a
    // server-side apply removed as null, then refuses the object as "must be of type array":
    // a status row whose zones empty again could never be written. null decodes as absent.
    out.AddMember("nullable", true, a);
    Json items;
    Codec<T>::schema(items, a);
    out.AddMember("items", items, a);
  }
};

template <class T>
struct Codec<std::map<std::string, T>> {
  static void encode(const std::map<std::string, T>& v, Json& out, Alloc& a) {
    out.SetObject();
    for (const auto& [key, item] : v) {
      Json j;
      Codec<T>::encode(item, j, a);
      out.AddMember(stringValue(key, a), j, a);
    }
  }
  static Status decode(const Json& in, std::map<std::string, T>& v, const std::string& path) {
    if (!in.IsObject()) return typeError(path, "a map");
    v.clear();
    for (const auto& m : in.GetObject()) {
      std::string key(m.name.GetString(), m.name.GetStringLength());
      if (auto s = Codec<T>::decode(m.value, v[key], joinPath(path, key)); !s.isOk()) return s;
    }
    return Status::ok();
  }
  static void schema(Json& out, Alloc& a) {
    out.SetObject();
    out.AddMember("type", "object", a);
    Json items;
    Codec<T>::schema(items, a);
    out.AddMember("additionalProperties", items, a);
  }
};

// One declared field of struct T.
template <class T>
class FieldBase {
 public:
  FieldBase(std::string name, FieldSpec spec) : name_(std::move(name)), spec_(std::move(spec)) {}
  virtual ~FieldBase() = default;
  virtual void encode(const T& object, Json& out, Alloc& a) const = 0;
  virtual Status decode(const Json& in, T& object, const std::string& path) const = 0;
  virtual void schema(Json& out, Alloc& a) const = 0;
  const std::string& name() const { return name_; }
  const FieldSpec& spec() const { return spec_; }

 protected:
  std::string name_;
  FieldSpec spec_;
};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <class T, class M>
class Field final : public FieldBase<T> {
 public:
  Field(std::string name, M T::*member, FieldSpec spec)
      : FieldBase<T>(std::move(name), std::move(spec)), member_(member) {}

  void encode(const T& object, Json& out, Alloc& a) const override {
    Json value;
    Codec<M>::encode(object.*member_, value, a);
    // Omit-when-empty, except where emptiness differs from absence: an optional that is set,
    // a required field, or a field whose default is not the zero value.
    if constexpr (IsOptional<M>::value) {
      if (value.IsNull()) return;
    } else {
      if (isEmptyJson(value) && !this->spec_.required && this->spec_.default_json == nullptr) {
        return;
      }
    }
    out.AddMember(stringValue(this->name_, a), value, a);
  }

  Status decode(const Json& in, T& object, const std::string& path) const override {
    const std::string here = joinPath(path, this->name_);
    auto it = in.FindMember(this->name_.c_str());
    if (it == in.MemberEnd() || it->value.IsNull()) {
      if (this->spec_.default_json != nullptr) {
        rapidjson::Document d;
        d.Parse(this->spec_.default_json);
        return Codec<M>::decode(d, object.*member_, here);
      }
      if (this->spec_.required && !this->spec_.lenient_decode) {
        return error(Code::kInvalidArgument, "FieldRequired", here + ": Required value");
      }
      return Status::ok();
    }
    if (auto s = checkConstraints(it->value, this->spec_, here); !s.isOk()) return s;
    return Codec<M>::decode(it->value, object.*member_, here);
  }

  void schema(Json& out, Alloc& a) const override {
    Codec<M>::schema(out, a);
    applySpecToSchema(this->spec_, out, a);
  }

 private:
  M T::*member_;
};

// The ordered field list of struct T plus its description.
template <class T>
class Fields {
 public:
  explicit Fields(const char* description = "") : description_(description) {}

  template <class M>
  Fields& field(const char* name, M T::*member, FieldSpec spec = {}) {
    fields_.push_back(std::make_shared<Field<T, M>>(name, member, std::move(spec)));
    return *this;
  }
  // Extra schema keywords on the struct itself (e.g. x-kubernetes-preserve-unknown-fields).
  Fields& preserveUnknownFields() {
    preserve_unknown_ = true;
    return *this;
  }
  // Exactly one of these fields must be set: a oneOf of `required` branches, which structural
  // schemas allow (and Kubernetes 1.20 enforces) without CEL. The consumer still checks it, for
  // objects stored before the rule existed.
  Fields& exactlyOneOf(std::vector<std::string> names) {
    exactly_one_of_ = std::move(names);
    return *this;
  }

  void encode(const T& object, Json& out, Alloc& a) const {
    out.SetObject();
    for (const auto& f : fields_) f->encode(object, out, a);
  }
  Status decode(const Json& in, T& object, const std::string& path) const {
    if (!in.IsObject()) return typeError(path, "an object");
    for (const auto& f : fields_) {
      if (auto s = f->decode(in, object, path); !s.isOk()) return s;
    }
    return Status::ok();
  }
  void schema(Json& out, Alloc& a) const {
    out.SetObject();
    out.AddMember("type", "object", a);
    if (*description_ != '\0') out.AddMember("description", Json(description_, a), a);
    Json properties(rapidjson::kObjectType);
    Json required(rapidjson::kArrayType);
    for (const auto& f : fields_) {
      Json prop;
      f->schema(prop, a);
      properties.AddMember(stringValue(f->name(), a), prop, a);
      if (f->spec().required) required.PushBack(stringValue(f->name(), a), a);
    }
    if (!properties.ObjectEmpty()) out.AddMember("properties", properties, a);
    if (!required.Empty()) out.AddMember("required", required, a);
    if (preserve_unknown_) out.AddMember("x-kubernetes-preserve-unknown-fields", true, a);
    if (!exactly_one_of_.empty()) {
      Json one_of(rapidjson::kArrayType);
      for (const auto& name : exactly_one_of_) {
        Json branch(rapidjson::kObjectType);
        Json one(rapidjson::kArrayType);
        one.PushBack(stringValue(name, a), a);
        branch.AddMember("required", one, a);
        one_of.PushBack(branch, a);
      }
      out.AddMember("oneOf", one_of, a);
    }
  }
  bool hasRequired() const {
    for (const auto& f : fields_) {
      if (f->spec().required) return true;
    }
    return false;
  }

 private:
  const char* description_;
  std::vector<std::shared_ptr<const FieldBase<T>>> fields_;
  bool preserve_unknown_ = false;
  std::vector<std::string> exactly_one_of_;
};

template <Described T>
struct Codec<T> {
  static void encode(const T& v, Json& out, Alloc& a) { T::describe().encode(v, out, a); }
  static Status decode(const Json& in, T& v, const std::string& path) {
    return T::describe().decode(in, v, path);
  }
  static void schema(Json& out, Alloc& a) { T::describe().schema(out, a); }
};

// Definitions behind codec.h's toJson/fromJson; kind sources instantiate them explicitly.
template <class T>
std::string toJson(const T& value) {
  rapidjson::Document doc;
  Codec<T>::encode(value, doc, doc.GetAllocator());
  return serializeJson(doc);
}

template <class T>
StatusOr<T> fromJson(std::string_view text) {
  rapidjson::Document doc;
  if (auto s = parseJson(text, doc); !s.isOk()) return s;
  T value{};
  if (auto s = Codec<T>::decode(doc, value, ""); !s.isOk()) return s;
  return value;
}

// The OpenAPI schema of T as a document (for tests and crdgen).
template <class T>
void schemaOf(Json& out, Alloc& a) {
  Codec<T>::schema(out, a);
}

}  // namespace banlieue::api
