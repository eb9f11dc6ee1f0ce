#include "host/roles/provider/status_writer.h"

#include <banlieue/sdk/json.h>

#include <algorithm>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;

// RapidJSON's equality: member order does not matter, numbers compare by value.
bool sameJson(const rapidjson::Value& a, const rapidjson::Value& b) {
  return a == b;
}

}  // namespace

StatusOr<bool> applyStatusIfChanged(kube::KubeClient& client, const kube::ResourceType& type,
                                    const rapidjson::Value& object, const rapidjson::Value& status,
                                    const std::string& field_manager, bool whole_status,
                                    std::string* written_version) {
  const auto* current = json::member(&object, "status");
  bool changed = current == nullptr || !current->IsObject();
  if (!changed && whole_status) {
    // A field dropped from the desired status is a change too: the apply removes it.
    for (const auto& m : current->GetObject()) {
      if (!status.HasMember(m.name)) {
        changed = true;
        break;
      }
    }
  }
  if (!changed) {
    for (const auto& m : status.GetObject()) {
      const auto* now = json::member(current, m.name.GetString());
      if (now == nullptr || !sameJson(*now, m.value)) {
        changed = true;
        break;
      }
    }
  }
  if (!changed) return false;

  rapidjson::Document body(rapidjson::kObjectType);
  auto& a = body.GetAllocator();
  body.AddMember("apiVersion", json::stringValue(json::stringOr(&object, "apiVersion"), a), a);
  body.AddMember("kind", json::stringValue(json::stringOr(&object, "kind"), a), a);
  rapidjson::Value meta(rapidjson::kObjectType);
  std::string name = json::stringOr(&object, "metadata.name");
  std::string ns = json::stringOr(&object, "metadata.namespace");
  meta.AddMember("name", json::stringValue(name, a), a);
  if (!ns.empty()) meta.AddMember("namespace", json::stringValue(ns, a), a);
  body.AddMember("metadata", meta, a);
  body.AddMember("status", rapidjson::Value(status, a), a);
  kube::ApplyOptions options;
  options.field_manager = field_manager;
  options.force = true;
  options.subresource = "status";
  auto applied = client.apply(type, ns, name, json::serialize(body), options);
  if (!applied.ok()) return applied.status();
  if (written_version != nullptr) {
    *written_version = json::stringOr(&*applied, "metadata.resourceVersion");
  }
  return true;
}

rapidjson::Value mergeConditions(const rapidjson::Value* current,
                                 const std::vector<runtime::Condition>& updates,
                                 rapidjson::Document::AllocatorType& allocator,
                                 KeepConditions keep) {
  rapidjson::Value out(rapidjson::kArrayType);
  if (current != nullptr && current->IsArray()) {
    for (const auto& c : current->GetArray()) {
      std::string type = json::stringOr(&c, "type");
      bool updated = std::any_of(updates.begin(), updates.end(),
                                 [&](const runtime::Condition& u) { return u.type == type; });
      if (updated || keep == KeepConditions::kAll) {
        out.PushBack(rapidjson::Value(c, allocator), allocator);
      }
    }
  }
  std::string now = runtime::rfc3339Now();
  for (const auto& u : updates) runtime::setCondition(out, allocator, u, now);
  return out;
}

}  // namespace banlieue::roles::provider
