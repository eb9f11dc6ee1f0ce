#include "tests/support/stuck_namespaces.h"

#include <banlieue/sdk/json.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <ctime>
#include <string>
#include <string_view>
#include <vector>

namespace banlieue::testing {
namespace {

namespace json = sdk::json;

// The array at `path`, or nothing.
const rapidjson::Value* findArray(const rapidjson::Value& object, std::string_view path) {
  const auto* value = json::find(&object, path);
  return value != nullptr && value->IsArray() ? value : nullptr;
}

// metadata.deletionTimestamp ("2026-12-07T03:04:05Z") as seconds since the epoch; 0 when absent.
std::time_t deletionTime(const rapidjson::Value& object) {
  auto text = json::stringOr(&object, "metadata.deletionTimestamp");
  std::tm tm{};
  if (text.empty() || strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) {
    return 0;
  }
  return timegm(&tm);
}

// The namespaced resources of every API group that is not Kubernetes' own (banlieue's,
// infrastructure providers', a third party's, Cluster API's): where banlieue finalizers live.
std::vector<kube::ResourceType> customResourceTypes(kube::KubeClient& client) {
  std::vector<kube::ResourceType> types;
  auto groups = client.getDiscovery("/apis");
  if (!groups.ok()) return types;
  const auto* list = findArray(*groups, "groups");
  if (list == nullptr) return types;
  for (const auto& group : list->GetArray()) {
    std::string name = json::stringOr(&group, "name");
    bool builtin = name.find('.') == std::string::npos ||
                   (name.size() > 7 && name.compare(name.size() - 7, 7, ".k8s.io") == 0);
    std::string version = json::stringOr(&group, "preferredVersion.version");
    if (builtin || version.empty()) continue;
    auto resources = client.getDiscovery("/apis/" + name + "/" + version);
    if (!resources.ok()) continue;
    const auto* items = findArray(*resources, "resources");
    if (items == nullptr) continue;
    for (const auto& resource : items->GetArray()) {
      std::string plural = json::stringOr(&resource, "name");
      if (plural.find('/') != std::string::npos) continue;  // a subresource
      if (!json::boolean(&resource, "namespaced")) continue;
      types.push_back({name, version, plural, true});
    }
  }
  return types;
}

}  // namespace

SweepCount sweepStuckNamespaces(kube::KubeClient& client, std::chrono::seconds older_than) {
  SweepCount count;
  auto namespaces = client.list(kube::resources::kNamespace, "");
  if (!namespaces.ok()) return count;
  const auto* items = findArray(*namespaces, "items");
  if (items == nullptr) return count;
  std::vector<std::string> stuck;
  const auto now = std::time(nullptr);
  for (const auto& ns : items->GetArray()) {
    auto since = deletionTime(ns);
    if (since != 0 && now - since > older_than.count()) {
      stuck.push_back(json::stringOr(&ns, "metadata.name"));
    }
  }
  count.namespaces = static_cast<int>(stuck.size());
  if (stuck.empty()) return count;
  const auto types = customResourceTypes(client);
  for (const auto& ns : stuck) {
    for (const auto& type : types) {
      auto objects = client.list(type, ns);
      if (!objects.ok()) continue;
      const auto* list = findArray(*objects, "items");
      if (list == nullptr) continue;
      for (const auto& object : list->GetArray()) {
        const auto* finalizers = findArray(object, "metadata.finalizers");
        if (finalizers == nullptr) continue;
        // A merge patch of the list without banlieue's, guarded by the resourceVersion it was
        // computed from: a conflict leaves the object to the next sweep.
        rapidjson::StringBuffer patch;
        rapidjson::Writer<rapidjson::StringBuffer> writer(patch);
        writer.StartObject();
        writer.Key("metadata");
        writer.StartObject();
        writer.Key("resourceVersion");
        writer.String(json::stringOr(&object, "metadata.resourceVersion").c_str());
        writer.Key("finalizers");
        writer.StartArray();
        bool removed = false;
        for (const auto& finalizer : finalizers->GetArray()) {
          std::string_view text = finalizer.IsString() ? finalizer.GetString() : "";
          if (text.rfind("banlieue.io/", 0) == 0) {
            removed = true;
          } else {
            writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
          }
        }
        writer.EndArray();
        writer.EndObject();
        writer.EndObject();
        if (!removed) continue;
        auto patched = client.patch(type, ns, json::stringOr(&object, "metadata.name"),
                                    kube::PatchType::kMerge, patch.GetString());
        if (patched.ok()) ++count.objects;
      }
    }
  }
  return count;
}

}  // namespace banlieue::testing
