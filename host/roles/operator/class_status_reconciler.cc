#include "host/roles/operator/class_status_reconciler.h"

#include "host/api/codec.h"
#include "host/kube/api_error.h"
#include "host/roles/operator/provider_reconciler.h"
#include "host/roles/operator/workload.h"
#include "host/roles/operator/workload_names.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

#include <algorithm>

namespace banlieue::roles::provider_operator {
namespace {}  // namespace

ClassStatusReconciler::ClassStatusReconciler(kube::KubeClient& client, runtime::Informer& classes,
                                             runtime::Informer& providers,
                                             PluginDirectories plugin_dirs,
                                             std::chrono::seconds resync)
    : client_(client),
      classes_(classes),
      providers_(providers),
      plugin_dirs_(std::move(plugin_dirs)),
      resync_(resync) {}

StatusOr<bool> ClassStatusReconciler::clusterRoleExists(const std::string& backend) {
  auto role = client_.get(rbac::kClusterRole, "", backendClusterRoleName(backend));
  if (role.ok()) return true;
  if (kube::isNotFound(role.status())) return false;
  return role.status();
}

runtime::Result ClassStatusReconciler::reconcile(const runtime::Request& request) {
  auto object = classes_.get(request.key());
  if (!object) return runtime::Result::done();
  auto provider_class = api::fromJson<api::ProviderClass>(api::serializeJson(*object));
  if (!provider_class.ok()) return runtime::Result::terminal(provider_class.status());
  const auto& spec = provider_class->spec;

  // docs/adr/0024: a class stays while any Provider uses it, so their workloads can still be
  // minted and their machines removed; the Providers themselves are the user's to delete.
  auto referencing = providers_.byIndex(kClassIndex, request.name);
  const bool deleting = !provider_class->metadata.deletion_timestamp.empty();
  if (deleting && referencing.empty()) {
    if (runtime::hasFinalizer(*object, kClassFinalizer)) {
      auto removed =
          runtime::removeFinalizer(client_, kProviderClassType, *object, kClassFinalizer);
      if (!removed.isOk()) return runtime::Result::retry(removed);
    }
    return runtime::Result::done();
  }
  if (!deleting && !runtime::hasFinalizer(*object, kClassFinalizer)) {
    auto added = runtime::addFinalizer(client_, kProviderClassType, *object, kClassFinalizer);
    if (!added.isOk()) return runtime::Result::retry(added);
  }

  auto role_exists = clusterRoleExists(spec.backend);
  if (!role_exists.ok()) return runtime::Result::retry(role_exists.status());
  auto readiness = evaluateClass(*provider_class, plugin_dirs_, *role_exists);
  const int64_t generation = provider_class->metadata.generation;

  // Messages are never empty: a 1.20 apiserver turns an applied "" into null on the next
  // apply and then refuses the object.
  // Start from the conditions as they are, so unchanged ones keep their lastTransitionTime,
  // and write back only the types this controller owns.
  rapidjson::Document current;
  auto& a = current.GetAllocator();
  current.SetArray();
  if (const auto* conditions = sdk::json::find(object.get(), "status.conditions");
      conditions != nullptr && conditions->IsArray()) {
    for (const auto& c : conditions->GetArray()) {
      auto type = sdk::json::stringOr(&c, "type", "");
      if (type == "Ready" || type == "Paused" || type == "Deleting" || type == "PluginPublished") {
        current.PushBack(rapidjson::Value(c, a), a);
      }
    }
  }
  std::string now = runtime::rfc3339Now();
  runtime::setCondition(current, a,
                        {"Ready", readiness.ready ? "True" : "False", readiness.reason,
                         readiness.message, generation},
                        now);
  runtime::setCondition(current, a,
                        {"PluginPublished", readiness.plugin_published ? "True" : "False",
                         readiness.published_reason, readiness.published_message, generation},
                        now);
  runtime::setCondition(
      current, a,
      spec.paused ? runtime::Condition{"Paused", "True", "Paused",
                                       "spec.paused is set: the operator changes no workload of "
                                       "this class",
                                       generation}
                  : runtime::Condition{"Paused", "False", "NotPaused", "spec.paused is not set",
                                       generation},
      now);

  if (deleting) {
    std::vector<std::string> names;
    names.reserve(referencing.size());
    for (const auto& p : referencing) names.push_back(runtime::objectKey(*p));
    std::sort(names.begin(), names.end());
    std::string listed;
    for (size_t i = 0; i < names.size() && i < 5; ++i) listed += (i == 0 ? "" : ", ") + names[i];
    if (names.size() > 5) listed += " and " + std::to_string(names.size() - 5) + " more";
    runtime::setCondition(
        current, a,
        {"Deleting", "True", "ProvidersRemain",
         std::to_string(names.size()) +
             (names.size() == 1 ? " Provider still uses" : " Providers still use") +
             " this class (" + listed +
             "): the class goes once they are deleted or moved to another class",
         generation},
        now);
  }

  rapidjson::Document doc(rapidjson::kObjectType);
  auto& d = doc.GetAllocator();
  rapidjson::Value status(rapidjson::kObjectType);
  status.AddMember("conditions", rapidjson::Value(current, d), d);
  status.AddMember("providers", static_cast<int32_t>(referencing.size()), d);
  status.AddMember("observedGeneration", generation, d);
  if (readiness.machine_kind) {
    rapidjson::Value kind(rapidjson::kObjectType);
    kind.AddMember("apiVersion", sdk::json::stringValue(readiness.machine_kind->api_version, d), d);
    kind.AddMember("kind", sdk::json::stringValue(readiness.machine_kind->kind, d), d);
    status.AddMember("machineKind", kind, d);
  }
  if (!readiness.machine_kinds.empty()) {
    rapidjson::Value kinds(rapidjson::kArrayType);
    for (const auto& k : readiness.machine_kinds) {
      rapidjson::Value kind(rapidjson::kObjectType);
      kind.AddMember("apiVersion", sdk::json::stringValue(k.api_version, d), d);
      kind.AddMember("kind", sdk::json::stringValue(k.kind, d), d);
      kinds.PushBack(kind, d);
    }
    status.AddMember("machineKinds", kinds, d);
  }
  rapidjson::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", sdk::json::stringValue(request.name, d), d);
  doc.AddMember("apiVersion", sdk::json::stringValue(kProviderClassType.apiVersion(), d), d);
  doc.AddMember("kind", "ProviderClass", d);
  doc.AddMember("metadata", meta, d);
  doc.AddMember("status", status, d);
  auto applied = client_.apply(kProviderClassType, "", request.name, api::serializeJson(doc),
                               kube::ApplyOptions{kFieldManager, true, "status"});
  if (!applied.ok()) return runtime::Result::retry(applied.status());
  // The ClusterRole and the plugin directory are not watched: look again in a while.
  return runtime::Result::requeueAfter(resync_);
}

}  // namespace banlieue::roles::provider_operator
