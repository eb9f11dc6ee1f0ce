#include "tests/support/stuck_namespaces.h"

#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

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

// metadata.deletionTimestamp as seconds since the epoch; 0 when absent or malformed.
std::time_t deletionTime(const rapidjson::Value& object) {
  return runtime::parseRfc3339(json::stringOr(&object, "metadata.deletionTimestamp")).value_or(0);
}

// The finalizers of `object` that banlieue puts.
std::vector<std::string> banlieueFinalizers(const rapidjson::Value& object) {
  std::vector<std::string> names;
  const auto* finalizers = findArray(object, "metadata.finalizers");
  if (finalizers == nullptr) return names;
  for (const auto& finalizer : finalizers->GetArray()) {
    if (finalizer.IsString() && std::string(finalizer.GetString()).rfind("banlieue.io/", 0) == 0) {
      names.emplace_back(finalizer.GetString());
    }
  }
  return names;
}

// The namespaced resources of every API group that is not Kubernetes' own (banlieue's,
// infrastructure providers', a third party's, Cluster API's): where banlieue finalizers live.
// (host/kube/discovery.h maps one kind to its resource; this walks them all.)
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

SweepCount sweepStuckNamespaces(kube::KubeClient& client, std::chrono::seconds older_than,
                                const std::string& only) {
  SweepCount count;
  auto namespaces = client.list(kube::resources::kNamespace, "");
  if (!namespaces.ok()) return count;
  const auto* items = findArray(*namespaces, "items");
  if (items == nullptr) return count;
  std::vector<std::string> stuck;
  const auto now = std::time(nullptr);
  for (const auto& ns : items->GetArray()) {
    std::string name = json::stringOr(&ns, "metadata.name");
    auto since = deletionTime(ns);
    if (since != 0 && now - since >= older_than.count() && (only.empty() || name == only)) {
      stuck.push_back(name);
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
        // Each removal is guarded by the resourceVersion it was computed from; a conflict
        // reads the object again (runtime::removeFinalizer).
        auto names = banlieueFinalizers(object);
        bool removed = !names.empty();
        for (const auto& name : names) {
          removed = runtime::removeFinalizer(client, type, object, name).isOk() && removed;
        }
        if (removed) ++count.objects;
      }
    }
  }
  return count;
}

}  // namespace banlieue::testing
