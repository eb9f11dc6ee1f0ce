#include "host/roles/operator/provider_teardown.h"

#include "host/kube/api_error.h"
#include "host/roles/operator/workload_names.h"

#include <banlieue/sdk/json.h>

#include <set>

namespace banlieue::roles::provider_operator {
namespace {

namespace json = sdk::json;

// How many names a message lists before "and N more".
constexpr size_t kNamedInMessage = 5;

std::string joinNames(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < kNamedInMessage; ++i) {
    out += (i == 0 ? "" : ", ") + names[i];
  }
  if (names.size() > kNamedInMessage) {
    out += " and " + std::to_string(names.size() - kNamedInMessage) + " more";
  }
  return out;
}

}  // namespace

std::vector<api::InfrastructureKind> servedKinds(const api::ProviderClass& provider_class,
                                                 const PluginDirectories& dirs) {
  std::vector<api::InfrastructureKind> kinds;
  std::set<std::string> seen;
  auto add = [&](api::InfrastructureKind kind) {
    if (kind.api_version.empty() || kind.kind.empty()) return;
    if (seen.insert(kind.api_version + "/" + kind.kind).second) kinds.push_back(std::move(kind));
  };
  if (auto manifest = classManifest(provider_class, dirs); manifest.ok()) {
    for (const auto& gvk : manifest->infrastructure) {
      add({.api_version = gvk.group.empty() ? gvk.version : gvk.group + "/" + gvk.version,
           .kind = gvk.kind});
    }
  }
  if (provider_class.status.machine_kind) add(*provider_class.status.machine_kind);
  for (const auto& kind : provider_class.status.machine_kinds) add(kind);
  if (const auto& published = provider_class.status.plugin) {
    for (const auto& kind : published->infrastructure_kinds) add(kind);
  }
  return kinds;
}

StatusOr<Dependents> releaseDependents(kube::KubeClient& client, kube::KindResolver& resolver,
                                       const std::string& ns, const std::string& provider,
                                       const std::vector<api::InfrastructureKind>& kinds) {
  Dependents out;
  kube::ListOptions list;
  list.label_selector = std::string(kLabelProvider) + "=" + provider;
  for (const auto& kind : kinds) {
    auto type = resolver.resolve(kind.api_version, kind.kind);
    if (!type.ok()) {
      if (type.status().reason() != "KindNotServed") {
        out.unknown.push_back(kind.kind + ": " + type.status().message());
      }
      continue;
    }
    auto items = client.list(*type, ns, list);
    if (!items.ok()) {
      out.unknown.push_back(kind.kind + ": " + items.status().message());
      continue;
    }
    const auto* array = json::find(&*items, "items");
    if (array == nullptr || !array->IsArray()) continue;
    for (const auto& item : array->GetArray()) {
      if (json::stringOr(&item, "spec.providerRef.name") != provider) continue;
      std::string name = json::stringOr(&item, "metadata.name");
      out.remaining.push_back(kind.kind + " " + name);
      if (json::find(&item, "metadata.deletionTimestamp") != nullptr) continue;
      kube::DeleteOptions options;
      options.precondition_uid = json::stringOr(&item, "metadata.uid");
      if (auto s = client.remove(*type, ns, name, options); !s.isOk() && !kube::isNotFound(s)) {
        out.unknown.push_back(kind.kind + " " + name + " delete: " + s.message());
      }
    }
  }
  return out;
}

std::string dependentsMessage(const Dependents& dependents, bool workload_running) {
  std::string message;
  if (!dependents.remaining.empty()) {
    message = "waiting for " + std::to_string(dependents.remaining.size()) +
              " infrastructure object" + (dependents.remaining.size() == 1 ? "" : "s") +
              " to be deleted, each after its backend machine: " + joinNames(dependents.remaining);
    if (!workload_running) {
      message +=
          "; the provider workload has no ready replica, so nothing removes them until it runs "
          "again (see its pods)";
    }
  }
  if (!dependents.unknown.empty()) {
    message += (message.empty() ? "" : "; ") + std::string("cannot tell what remains: ") +
               joinNames(dependents.unknown);
  }
  return message;
}

}  // namespace banlieue::roles::provider_operator
