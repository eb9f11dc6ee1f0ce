#include "host/roles/operator/provider_reconciler.h"

#include "host/roles/common/image_finalizer.h"

#include "host/api/codec.h"
#include "host/api/user_data_contract.h"
#include "host/common/logging.h"
#include "host/kube/api_error.h"
#include "host/roles/operator/provider_teardown.h"
#include "host/roles/operator/workload_names.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>
#include <fmt/format.h>

#include <set>

namespace banlieue::roles::provider_operator {
namespace {

using runtime::Result;

std::shared_ptr<spdlog::logger> operatorLog() {
  return common::logger("operator");
}

// The object an Event is about: apiVersion, kind and metadata (listed objects may lack the
// first two).
rapidjson::Document regarding(const rapidjson::Value& provider) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  const std::string api_version = kProviderType.apiVersion();
  doc.AddMember("apiVersion", rapidjson::Value(api_version.c_str(), a), a);
  doc.AddMember("kind", "Provider", a);
  if (const auto* meta = sdk::json::member(&provider, "metadata")) {
    doc.AddMember("metadata", rapidjson::Value(*meta, a), a);
  }
  return doc;
}

std::string appliedKey(const std::string& plural, const std::string& ns, const std::string& name) {
  std::string key = plural;
  key += '/';
  key += ns;
  key += '/';
  key += name;
  return key;
}

}  // namespace

std::vector<std::string> providerClassIndex(const rapidjson::Value& provider) {
  auto name = sdk::json::string(&provider, "spec.providerClassRef.name");
  if (!name || name->empty()) return {};
  return {std::string(*name)};
}

std::string ownerProviderKey(const rapidjson::Value& minted) {
  // Label keys contain dots, so they are looked up as single members, not as paths.
  const auto* labels = sdk::json::find(&minted, "metadata.labels");
  const auto* name = sdk::json::member(labels, kLabelProvider);
  const auto* ns = sdk::json::member(labels, kLabelProviderNamespace);
  if (name == nullptr || ns == nullptr || !name->IsString() || !ns->IsString() ||
      name->GetStringLength() == 0 || ns->GetStringLength() == 0) {
    return {};
  }
  return std::string(ns->GetString()) + "/" + name->GetString();
}

ProviderReconciler::ProviderReconciler(kube::KubeClient& client, runtime::Informer& providers,
                                       runtime::Informer& classes, runtime::Informer& deployments,
                                       runtime::EventRecorder& events, WorkloadOptions options,
                                       PluginDirectories plugin_dirs, std::chrono::seconds resync)
    : client_(client),
      providers_(providers),
      classes_(classes),
      deployments_(deployments),
      events_(events),
      options_(std::move(options)),
      plugin_dirs_(std::move(plugin_dirs)),
      resync_(resync),
      resolver_(client) {}

Result ProviderReconciler::reconcile(const runtime::Request& request) {
  operatorLog()->debug("reconciling provider {}", request.key());
  auto object = providers_.get(request.key());
  if (!object) {
    // Gone without our finalizer (removed by hand, or never added): still leave nothing
    // behind, in particular the ClusterRoleBinding no garbage collector would reclaim.
    auto pruned = prune(request.ns, request.name, nullptr);
    return pruned.ok() ? Result::done() : Result::retry(pruned.status());
  }
  auto provider = api::fromJson<api::Provider>(api::serializeJson(*object));
  auto about = regarding(*object);
  if (!provider.ok()) {
    events_.warning(about, "InvalidProvider", "Decode", provider.status().message());
    return Result::terminal(provider.status());
  }
  const std::string key = request.key();

  if (!provider->metadata.deletion_timestamp.empty()) {
    if (!runtime::hasFinalizer(*object, kFinalizer)) return Result::done();
    return finalize(request, object, *provider);
  }

  if (!runtime::hasFinalizer(*object, kFinalizer)) {
    if (auto s = runtime::addFinalizer(client_, kProviderType, *object, kFinalizer); !s.isOk()) {
      return Result::retry(s);
    }
  }

  const std::string& class_name = provider->spec.provider_class_ref.name;
  auto class_object = classes_.get(class_name);
  if (!class_object) {
    events_.warning(about, "ProviderClassNotFound", "Resolve",
                    "ProviderClass " + class_name + " does not exist");
    return Result::requeueAfter(resync_);
  }
  auto provider_class = api::fromJson<api::ProviderClass>(api::serializeJson(*class_object));
  if (!provider_class.ok()) {
    events_.warning(about, "InvalidProviderClass", "Resolve",
                    "ProviderClass " + class_name + ": " + provider_class.status().message());
    return Result::requeueAfter(resync_);
  }

  // Checked every resync period (30 s by default) rather than waiting long, so un-pausing takes
  // effect quickly even if a watch event were missed.
  if (provider->spec.paused || provider_class->spec.paused) {
    events_.normal(about, "Paused", "Reconcile",
                   provider->spec.paused
                       ? "Provider is paused: workload left as it is"
                       : "ProviderClass " + class_name + " is paused: workload left as it is");
    return Result::requeueAfter(resync_);
  }

  // userData enabled in this namespace (bootstrap's RoleBinding for the controller): the
  // provider reads its machines' rendered userData Secrets there (docs/adr/0026).
  auto user_data_binding =
      client_.get(rbac::kRoleBinding, provider->metadata.namespace_, api::kUserDataRoleBinding);
  if (!user_data_binding.ok() && !kube::isNotFound(user_data_binding.status())) {
    return Result::retry(user_data_binding.status());
  }
  auto workload = buildWorkload(*provider, *provider_class, options_, user_data_binding.ok());
  if (!workload.ok()) {
    events_.warning(about, workload.status().reason(), "Build", workload.status().message());
    operatorLog()->warn("provider {}: {}", key, workload.status().message());
    return Result::requeueAfter(resync_);
  }
  for (auto& minted : workload->objects) {
    if (auto s = applyObject(minted); !s.isOk()) {
      events_.warning(about, "ApplyFailed", "Apply",
                      minted.type.plural + " " + minted.name + ": " + s.message());
      return Result::retry(s);
    }
  }
  events_.normal(about, "WorkloadApplied", "Apply",
                 (workload->external ? "identity and RBAC " : "workload ") + workload->name +
                     " applied in namespace " + workload->workload_ns);

  auto pruned = prune(request.ns, request.name, &*workload);
  if (!pruned.ok()) return Result::retry(pruned.status());
  for (const auto& name : std::set<std::string>(pruned->begin(), pruned->end())) {
    events_.normal(about, "WorkloadPruned", "Prune", "deleted superseded " + name);
  }

  if (auto s = applyStatus(request.ns, request.name, observedWorkload(*workload)); !s.isOk()) {
    return Result::retry(s);
  }
  return Result::requeueAfter(resync_);
}

namespace {

std::string appliedKey(const MintedObject& object) {
  return appliedKey(object.type.plural, object.ns, object.name);
}

std::string appliedStamp(const kube::ResourceType& type, const rapidjson::Value& live) {
  std::string hash;
  if (const auto* annotations = sdk::json::find(&live, "metadata.annotations")) {
    if (const auto* h = sdk::json::member(annotations, kAppliedHashAnnotation);
        h != nullptr && h->IsString()) {
      hash = h->GetString();
    }
  }
  std::string stamp =
      type.plural == kube::resources::kDeployment.plural
          ? std::to_string(sdk::json::integer(&live, "metadata.generation").value_or(0))
          : sdk::json::stringOr(&live, "metadata.resourceVersion", "");
  return hash + "@" + stamp;
}

}  // namespace

bool ProviderReconciler::upToDate(const MintedObject& object) {
  std::string remembered;
  {
    std::lock_guard<std::mutex> lock(applied_mutex_);
    auto it = applied_.find(appliedKey(object));
    if (it == applied_.end()) return false;
    remembered = it->second;
  }
  const auto* desired = sdk::json::find(&object.body, "metadata.annotations");
  const auto* hash = sdk::json::member(desired, kAppliedHashAnnotation);
  if (hash == nullptr || remembered.rfind(std::string(hash->GetString()) + "@", 0) != 0) {
    return false;
  }
  if (object.type.plural == kube::resources::kDeployment.plural) {
    auto live = deployments_.get(object.ns + "/" + object.name);
    return live && appliedStamp(object.type, *live) == remembered;
  }
  auto live = client_.get(object.type, object.ns, object.name);
  return live.ok() && appliedStamp(object.type, *live) == remembered;
}

Status ProviderReconciler::applyObject(MintedObject& object) {
  if (upToDate(object)) return Status();
  kube::ApplyOptions apply{kFieldManager, true, {}};
  std::string body = api::serializeJson(object.body);
  auto applied = client_.apply(object.type, object.ns, object.name, body, apply);
  auto remember = [&](const rapidjson::Value& live) {
    std::lock_guard<std::mutex> lock(applied_mutex_);
    applied_[appliedKey(object)] = appliedStamp(object.type, live);
  };
  if (applied.ok()) {
    remember(*applied);
    return Status();
  }
  // A binding's roleRef is immutable: when it must change (the class now runs another
  // backend), the binding is replaced.
  bool binding = object.type.plural == rbac::kRoleBinding.plural ||
                 object.type.plural == rbac::kClusterRoleBinding.plural;
  if (binding && kube::isInvalid(applied.status())) {
    if (auto s = client_.remove(object.type, object.ns, object.name);
        !s.isOk() && !kube::isNotFound(s)) {
      return s;
    }
    applied = client_.apply(object.type, object.ns, object.name, body, apply);
    if (applied.ok()) {
      remember(*applied);
      return Status();
    }
  }
  return applied.status();
}

StatusOr<std::vector<std::string>> ProviderReconciler::prune(const std::string& ns,
                                                             const std::string& name,
                                                             const Workload* keep) {
  std::vector<std::string> removed;
  kube::ListOptions list;
  list.label_selector = providerSelector(ns, name);
  std::set<std::string> live_deployments;  // uids of this Provider's Deployments that stay
  for (const auto& type : mintedTypes()) {
    auto items = client_.list(type, "", list);
    if (!items.ok()) return items.status();
    const auto* array = sdk::json::find(&*items, "items");
    if (array == nullptr || !array->IsArray()) continue;
    for (const auto& item : array->GetArray()) {
      std::string item_ns = sdk::json::stringOr(&item, "metadata.namespace", "");
      std::string item_name = sdk::json::stringOr(&item, "metadata.name", "");
      if (keep != nullptr && keep->keep.count({type.plural, item_ns, item_name}) != 0) {
        if (type.plural == kube::resources::kDeployment.plural) {
          live_deployments.insert(sdk::json::stringOr(&item, "metadata.uid", ""));
        }
        continue;
      }
      kube::DeleteOptions options;
      options.propagation_policy = "Background";
      if (auto s = client_.remove(type, item_ns, item_name, options);
          !s.isOk() && !kube::isNotFound(s)) {
        return s;
      }
      {
        std::lock_guard<std::mutex> lock(applied_mutex_);
        applied_.erase(appliedKey(type.plural, item_ns, item_name));
      }
      operatorLog()->info("provider {}/{}: deleted {} {}{}", ns, name, type.plural,
                          item_ns.empty() ? "" : item_ns + "/", item_name);
      removed.push_back(
          fmt::format("{} {}{}{}", type.plural, item_ns, item_ns.empty() ? "" : "/", item_name));
    }
  }
  // The pods' ReplicaSets carry the same labels: one whose Deployment is gone goes too.
  auto replica_sets = client_.list(kube::resources::kReplicaSet, "", list);
  if (!replica_sets.ok()) return replica_sets.status();
  for (const auto& stale : staleReplicaSets(*replica_sets, live_deployments)) {
    auto slash = stale.find('/');
    kube::DeleteOptions options;
    options.propagation_policy = "Background";
    if (auto s = client_.remove(kube::resources::kReplicaSet, stale.substr(0, slash),
                                stale.substr(slash + 1), options);
        !s.isOk() && !kube::isNotFound(s)) {
      return s;
    }
    operatorLog()->info("provider {}/{}: deleted replicasets {} (its Deployment is gone)", ns, name,
                        stale);
    removed.push_back("replicasets " + stale);
  }
  return removed;
}

Result ProviderReconciler::finalize(const runtime::Request& request, const runtime::Object& object,
                                    const api::Provider& provider) {
  const std::string key = request.key();
  auto about = regarding(*object);
  // What the class's plugin serves; with no class (never created, or removed by force) nothing
  // can have run for this Provider through the operator, so nothing is waited for.
  std::vector<api::InfrastructureKind> kinds;
  if (auto class_object = classes_.get(provider.spec.provider_class_ref.name)) {
    auto provider_class = api::fromJson<api::ProviderClass>(api::serializeJson(*class_object));
    if (provider_class.ok()) kinds = servedKinds(*provider_class, plugin_dirs_);
  }
  auto dependents = releaseDependents(client_, resolver_, request.ns, request.name, kinds);
  if (!dependents.ok()) return Result::retry(dependents.status());
  if (!dependents->empty()) {
    std::string reason =
        dependents->remaining.empty() ? "InfrastructureUnknown" : "WaitingForInfrastructure";
    std::string message = dependentsMessage(*dependents, workloadRunning(provider));
    std::string previous;
    if (const auto* conditions = sdk::json::find(object.get(), "status.conditions");
        conditions != nullptr && conditions->IsArray()) {
      for (const auto& c : conditions->GetArray()) {
        if (sdk::json::stringOr(&c, "type", "") == "Deleting") {
          previous = sdk::json::stringOr(&c, "message", "");
        }
      }
    }
    if (message != previous) {
      if (auto s = applyDeleting(object, reason, message); !s.isOk()) return Result::retry(s);
      events_.normal(about, reason, "Delete", message);
      operatorLog()->info("provider {} being deleted: {}", key, message);
    }
    // Their deletion is the provider's work, not a watch of ours: look again shortly.
    return Result::requeueAfter(kDependentsPoll);
  }
  auto pruned = prune(request.ns, request.name, nullptr);
  if (!pruned.ok()) return Result::retry(pruned.status());
  events_.normal(about, "WorkloadDeleted", "Cleanup",
                 "deleted the provider workload (" + std::to_string(pruned->size()) + " objects)");
  // The VMImages it imported must not wait on a workload that is gone; their copies stay on
  // the backend (docs/adr/0037).
  auto released = releaseImageFinalizers(client_, request.ns, request.name);
  if (!released.ok()) return Result::retry(released.status());
  if (*released > 0) {
    events_.normal(about, "ImagesReleased", "Cleanup",
                   "released " + std::to_string(*released) +
                       " VMImage(s) it imported; their copies stay on the backend");
  }
  if (auto s = runtime::removeFinalizer(client_, kProviderType, *object, kFinalizer); !s.isOk()) {
    return Result::retry(s);
  }
  operatorLog()->info("provider {} deleted; its workload is gone", key);
  return Result::done();
}

bool ProviderReconciler::workloadRunning(const api::Provider& provider) {
  const auto& workload = provider.status.workload;
  if (!workload || workload->mode == "External") return true;  // runs elsewhere: cannot tell
  auto deployment = deployments_.get(workload->namespace_ + "/" + workload->deployment_name);
  return deployment && sdk::json::integer(deployment.get(), "status.readyReplicas").value_or(0) > 0;
}

Status ProviderReconciler::applyDeleting(const runtime::Object& object, const std::string& reason,
                                         const std::string& message) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  auto s = [&](const std::string& v) {
    return rapidjson::Value(v.c_str(), static_cast<rapidjson::SizeType>(v.size()), a);
  };
  // From the current entry, so lastTransitionTime stays when only the message changes.
  rapidjson::Value conditions(rapidjson::kArrayType);
  if (const auto* current = sdk::json::find(object.get(), "status.conditions");
      current != nullptr && current->IsArray()) {
    for (const auto& c : current->GetArray()) {
      if (sdk::json::stringOr(&c, "type", "") == "Deleting") {
        conditions.PushBack(rapidjson::Value(c, a), a);
      }
    }
  }
  runtime::setCondition(conditions, a,
                        {"Deleting", "True", reason, message,
                         sdk::json::integer(object.get(), "metadata.generation").value_or(0)},
                        runtime::rfc3339Now());
  rapidjson::Value status(rapidjson::kObjectType);
  status.AddMember("conditions", conditions, a);
  rapidjson::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", s(sdk::json::stringOr(object.get(), "metadata.name", "")), a);
  meta.AddMember("namespace", s(sdk::json::stringOr(object.get(), "metadata.namespace", "")), a);
  doc.AddMember("apiVersion", s(kProviderType.apiVersion()), a);
  doc.AddMember("kind", "Provider", a);
  doc.AddMember("metadata", meta, a);
  doc.AddMember("status", status, a);
  auto applied =
      client_.apply(kProviderType, sdk::json::stringOr(object.get(), "metadata.namespace", ""),
                    sdk::json::stringOr(object.get(), "metadata.name", ""), api::serializeJson(doc),
                    kube::ApplyOptions{kDeletionFieldManager, true, "status"});
  return applied.ok() ? Status() : applied.status();
}

api::ProviderWorkload ProviderReconciler::observedWorkload(const Workload& workload) {
  api::ProviderWorkload out;
  out.namespace_ = workload.workload_ns;
  if (workload.external) {
    out.mode = "External";
    return out;
  }
  out.mode = "Managed";
  out.deployment_name = workload.name;
  out.ready_replicas = 0;
  auto deployment = deployments_.get(workload.workload_ns + "/" + workload.name);
  if (deployment) {
    out.ready_replicas = static_cast<int32_t>(
        sdk::json::integer(deployment.get(), "status.readyReplicas").value_or(0));
    if (auto generation = sdk::json::integer(deployment.get(), "status.observedGeneration")) {
      out.observed_generation = *generation;
    }
  }
  return out;
}

Status ProviderReconciler::applyStatus(const std::string& ns, const std::string& name,
                                       const api::ProviderWorkload& workload) {
  // Only status.workload, so the provider's own conditions and failure domains (another
  // field manager) are untouched.
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  auto s = [&](const std::string& v) {
    return rapidjson::Value(v.c_str(), static_cast<rapidjson::SizeType>(v.size()), a);
  };
  rapidjson::Value w(rapidjson::kObjectType);
  w.AddMember("mode", s(workload.mode), a);
  if (!workload.deployment_name.empty()) {
    w.AddMember("deploymentName", s(workload.deployment_name), a);
  }
  w.AddMember("namespace", s(workload.namespace_), a);
  if (workload.ready_replicas) w.AddMember("readyReplicas", *workload.ready_replicas, a);
  if (workload.observed_generation) {
    w.AddMember("observedGeneration", static_cast<int64_t>(*workload.observed_generation), a);
  }
  rapidjson::Value status(rapidjson::kObjectType);
  status.AddMember("workload", w, a);
  rapidjson::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", s(name), a);
  meta.AddMember("namespace", s(ns), a);
  doc.AddMember("apiVersion", s(kProviderType.apiVersion()), a);
  doc.AddMember("kind", "Provider", a);
  doc.AddMember("metadata", meta, a);
  doc.AddMember("status", status, a);
  auto applied = client_.apply(kProviderType, ns, name, api::serializeJson(doc),
                               kube::ApplyOptions{kFieldManager, true, "status"});
  return applied.ok() ? Status() : applied.status();
}

}  // namespace banlieue::roles::provider_operator
