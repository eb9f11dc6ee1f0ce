#include "host/roles/bootstrap/apply.h"

#include "host/api/kinds.h"
#include "host/roles/bootstrap/manifests.h"

#include <banlieue/sdk/json.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <thread>

namespace banlieue::roles::bootstrap {
namespace {

namespace json = sdk::json;

bool established(const rapidjson::Value& crd) {
  const auto* conditions = json::member(json::member(&crd, "status"), "conditions");
  if (conditions == nullptr || !conditions->IsArray()) return false;
  for (const auto& c : conditions->GetArray()) {
    if (json::stringOr(&c, "type") == "Established" && json::stringOr(&c, "status") == "True") {
      return true;
    }
  }
  return false;
}

Status waitEstablished(kube::KubeClient& client, const std::string& name,
                       std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto crd = client.get(kube::resources::kCustomResourceDefinition, "", name);
    if (!crd.ok()) return crd.status();
    if (established(*crd)) return Status::ok();
    if (std::chrono::steady_clock::now() > deadline) {
      return error(Code::kDeadlineExceeded, "CrdNotEstablished",
                   "CustomResourceDefinition " + name + " was not Established within " +
                       std::to_string(timeout.count()) + "s");
    }
    // The apiserver establishes a CRD within milliseconds; there is no watch worth opening.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// The object as bootstrap's apply can change it: without its status (other writers', such as
// the deployment controller's while pods start) and without the metadata every write moves.
rapidjson::Document applicableView(const rapidjson::Value& object) {
  rapidjson::Document view;
  view.CopyFrom(object, view.GetAllocator());
  if (view.IsObject()) {
    view.RemoveMember("status");
    if (auto metadata = view.FindMember("metadata");
        metadata != view.MemberEnd() && metadata->value.IsObject()) {
      for (const char* field :
           {"resourceVersion", "managedFields", "generation", "uid", "creationTimestamp"}) {
        metadata->value.RemoveMember(field);
      }
    }
  }
  return view;
}

}  // namespace

StatusOr<kube::ResourceType> resourceTypeOf(const rapidjson::Value& object) {
  std::string api_version = json::stringOr(&object, "apiVersion");
  std::string kind = json::stringOr(&object, "kind");
  static const std::map<std::pair<std::string, std::string>, kube::ResourceType> kKnown = {
      {{"v1", "Namespace"}, kube::resources::kNamespace},
      {{"v1", "ServiceAccount"}, kube::resources::kServiceAccount},
      {{"apps/v1", "Deployment"}, kube::resources::kDeployment},
      {{"apiextensions.k8s.io/v1", "CustomResourceDefinition"},
       kube::resources::kCustomResourceDefinition},
      {{"rbac.authorization.k8s.io/v1", "ClusterRole"},
       {"rbac.authorization.k8s.io", "v1", "clusterroles", false}},
      {{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding"},
       {"rbac.authorization.k8s.io", "v1", "clusterrolebindings", false}},
      {{"rbac.authorization.k8s.io/v1", "Role"},
       {"rbac.authorization.k8s.io", "v1", "roles", true}},
      {{"rbac.authorization.k8s.io/v1", "RoleBinding"},
       {"rbac.authorization.k8s.io", "v1", "rolebindings", true}},
  };
  if (auto it = kKnown.find({api_version, kind}); it != kKnown.end()) return it->second;
  for (const auto& k : api::builtinKinds()) {
    if (k.apiVersion() == api_version && k.kind == kind) {
      return kube::ResourceType{k.group, k.version, k.plural, k.namespaced};
    }
  }
  return error(Code::kInvalidArgument, "UnknownKind",
               "bootstrap does not know how to apply " + kind + " (" + api_version + ")");
}

StatusOr<ApplyReport> applyAll(kube::KubeClient& client,
                               const std::vector<rapidjson::Document>& objects,
                               std::chrono::seconds crd_timeout) {
  ApplyReport report;
  std::vector<std::string> pending_crds;
  for (const auto& object : objects) {
    auto type = resourceTypeOf(object);
    if (!type.ok()) return type.status();
    bool is_crd = type->plural == kube::resources::kCustomResourceDefinition.plural;
    // Objects of a new kind can only be applied once its CRD is served.
    if (!is_crd && !pending_crds.empty()) {
      for (const auto& name : pending_crds) {
        if (auto s = waitEstablished(client, name, crd_timeout); !s.isOk()) return s;
      }
      pending_crds.clear();
    }
    const auto* metadata = json::member(&object, "metadata");
    std::string name = json::stringOr(metadata, "name");
    std::string ns = type->namespaced ? json::stringOr(metadata, "namespace") : "";
    // What the object was before, to tell whether the apply changed it (nothing: a new one).
    std::optional<rapidjson::Document> before;
    if (auto existing = client.get(*type, ns, name); existing.ok()) {
      before = applicableView(*existing);
    }
    // force: bootstrap owns what it installs, as `kubectl apply --server-side --force-conflicts`.
    auto applied = client.apply(*type, ns, name, json::serialize(object),
                                {.field_manager = kFieldManager, .force = true});
    std::string what = json::stringOr(&object, "kind");
    what += ' ';
    if (!ns.empty()) what += ns + "/";
    what += name;
    if (!applied.ok()) {
      return error(applied.status().code(), applied.status().reason(),
                   "applying " + what + ": " + applied.status().message());
    }
    ++report.applied;
    // Not the resourceVersion: a status write between the read and the apply moves it too.
    bool changed = !before || applicableView(*applied) != *before;
    if (changed) ++report.changed;
    spdlog::info("{} {}", changed ? "applied" : "unchanged", what);
    if (is_crd) pending_crds.push_back(name);
  }
  for (const auto& name : pending_crds) {
    if (auto s = waitEstablished(client, name, crd_timeout); !s.isOk()) return s;
  }
  return report;
}

}  // namespace banlieue::roles::bootstrap
