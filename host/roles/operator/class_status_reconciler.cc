#include "host/roles/operator/class_status_reconciler.h"

#include "host/api/codec.h"
#include "host/kube/api_error.h"
#include "host/roles/operator/provider_reconciler.h"
#include "host/roles/operator/workload.h"
#include "host/roles/operator/workload_names.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

namespace banlieue::roles::provider_operator {
namespace {

rapidjson::Value str(const std::string& s, rapidjson::Document::AllocatorType& a) {
  return rapidjson::Value(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), a);
}

}  // namespace

ClassStatusReconciler::ClassStatusReconciler(kube::KubeClient& client, runtime::Informer& classes,
                                             runtime::Informer& providers,
                                             PluginDirectories plugin_dirs)
    : client_(client),
      classes_(classes),
      providers_(providers),
      plugin_dirs_(std::move(plugin_dirs)) {}

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

  auto role_exists = clusterRoleExists(spec.backend);
  if (!role_exists.ok()) return runtime::Result::retry(role_exists.status());
  auto readiness = evaluateClass(*provider_class, plugin_dirs_, *role_exists);
  auto referencing = providers_.byIndex(kClassIndex, request.name);
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
      if (type == "Ready" || type == "Paused") current.PushBack(rapidjson::Value(c, a), a);
    }
  }
  std::string now = runtime::rfc3339Now();
  runtime::setCondition(current, a,
                        {"Ready", readiness.ready ? "True" : "False", readiness.reason,
                         readiness.message, generation},
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

  rapidjson::Document doc(rapidjson::kObjectType);
  auto& d = doc.GetAllocator();
  rapidjson::Value status(rapidjson::kObjectType);
  status.AddMember("conditions", rapidjson::Value(current, d), d);
  status.AddMember("providers", static_cast<int32_t>(referencing.size()), d);
  status.AddMember("observedGeneration", generation, d);
  if (readiness.machine_kind) {
    rapidjson::Value kind(rapidjson::kObjectType);
    kind.AddMember("apiVersion", str(readiness.machine_kind->api_version, d), d);
    kind.AddMember("kind", str(readiness.machine_kind->kind, d), d);
    status.AddMember("machineKind", kind, d);
  }
  rapidjson::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", str(request.name, d), d);
  doc.AddMember("apiVersion", str(kProviderClassType.apiVersion(), d), d);
  doc.AddMember("kind", "ProviderClass", d);
  doc.AddMember("metadata", meta, d);
  doc.AddMember("status", status, d);
  auto applied = client_.apply(kProviderClassType, "", request.name, api::serializeJson(doc),
                               kube::ApplyOptions{kFieldManager, true, "status"});
  if (!applied.ok()) return runtime::Result::retry(applied.status());
  // The ClusterRole and the plugin directory are not watched: look again in a while.
  return runtime::Result::requeueAfter(kRequeueDefault);
}

}  // namespace banlieue::roles::provider_operator
