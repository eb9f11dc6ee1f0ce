#include "host/roles/controller/vm_reconciler.h"

#include "host/roles/controller/machine_kind_choice.h"

#include "host/api/codec.h"
#include "host/api/provider.h"
#include "host/api/vm_class.h"
#include "host/common/logging.h"
#include "host/kube/api_error.h"
#include "host/roles/controller/infra_builder.h"
#include "host/roles/controller/rendered_user_data.h"
#include "host/roles/controller/status_mirror.h"
#include "host/roles/controller/user_data.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

#include <algorithm>
#include <set>

namespace banlieue::controller {
namespace {

namespace json = sdk::json;
using runtime::Result;
using namespace std::chrono_literals;

template <class T>
StatusOr<T> decode(const runtime::Object& object) {
  return api::fromJson<T>(json::serialize(*object));
}

// The status as one canonical string: equal strings mean an apply would change nothing.
std::string encodeStatus(const api::VirtualMachineStatus& status) {
  api::VirtualMachine holder;
  holder.status = status;
  auto doc = json::parse(api::toJson(holder), "status");
  const auto* encoded = json::find(&doc, "status");
  return encoded == nullptr ? std::string("{}") : json::serialize(*encoded);
}

bool ownedBy(const rapidjson::Value& object, const std::string& vm_uid) {
  const auto* owner = runtime::controllerReference(object);
  return owner != nullptr && json::stringOr(owner, "uid") == vm_uid;
}

}  // namespace

struct VmReconciler::Pass {
  runtime::Object object;
  api::VirtualMachine vm;
  api::VirtualMachineStatus status;  // what this pass wants written
  std::string key;
  std::string now;
  int64_t generation = 0;
};

VmReconciler::VmReconciler(kube::KubeClient& client, VmCaches caches, InfraKinds& infra,
                           runtime::EventRecorder* events)
    : client_(client), caches_(caches), infra_(infra), events_(events) {}

void VmReconciler::warn(const Pass& pass, const std::string& reason, const std::string& action,
                        const std::string& note) {
  if (events_ != nullptr) events_->warning(*pass.object, reason, action, note);
}

Status VmReconciler::writeStatus(Pass& pass) {
  removeCondition(pass.status.conditions, conditions::kPaused);
  if (pass.vm.spec.paused) {
    setCondition(pass.status.conditions, conditions::kPaused, "True", "Paused",
                 "reconciliation paused via spec.paused", pass.generation, pass.now);
  }
  pass.status.observed_generation = pass.generation;
  if (encodeStatus(pass.status) == encodeStatus(pass.vm.status)) return Status();
  api::VirtualMachine body;
  body.api_version = "banlieue.io/v1alpha1";
  body.kind = "VirtualMachine";
  body.metadata.name = pass.vm.metadata.name;
  body.metadata.namespace_ = pass.vm.metadata.namespace_;
  body.status = pass.status;
  // Only apiVersion, kind, name, namespace and status: the spec belongs to the user.
  auto doc = json::parse(api::toJson(body), "status body");
  doc.RemoveMember("spec");
  auto applied =
      client_.apply(resources::kVirtualMachine, pass.vm.metadata.namespace_, pass.vm.metadata.name,
                    json::serialize(doc),
                    {.field_manager = kFieldManager, .force = true, .subresource = "status"});
  if (!applied.ok()) return applied.status();
  expectations_.expect(pass.key, caches_.vms, pass.key,
                       json::stringOr(&*applied, "metadata.resourceVersion"));
  announceReady(pass);
  return Status();
}

// The one Event of a VM's success path (docs/adr/0047): the moment it turns Ready, on the VM,
// where `kubectl describe` looks. What led there is in the conditions; failures have their own
// Warning Events.
void VmReconciler::announceReady(const Pass& pass) {
  const auto* before = findCondition(pass.vm.status.conditions, conditions::kReady);
  const auto* after = findCondition(pass.status.conditions, conditions::kReady);
  bool turned_ready = after != nullptr && after->status == "True" &&
                      (before == nullptr || before->status != "True");
  if (!turned_ready || events_ == nullptr) return;
  std::string where;
  if (pass.status.scheduled) {
    where = " on Provider " + pass.status.scheduled->provider_name;
    if (!pass.status.scheduled->failure_domain.empty()) {
      where += " in failure domain " + pass.status.scheduled->failure_domain;
    }
  }
  if (pass.status.infrastructure_ref) {
    where += " (" + pass.status.infrastructure_ref->kind + " " + pass.vm.metadata.name + ")";
  }
  events_->normal(*pass.object, "Ready", "Reconcile", "the machine is ready" + where);
}

Result VmReconciler::refuse(Pass& pass, const std::string& reason, const std::string& message,
                            std::chrono::seconds requeue) {
  setCondition(pass.status.conditions, conditions::kScheduled, "False", reason, message,
               pass.generation, pass.now);
  setCondition(pass.status.conditions, conditions::kReady, "False", reason, message,
               pass.generation, pass.now);
  bool changed = encodeStatus(pass.status) != encodeStatus(pass.vm.status);
  if (auto written = writeStatus(pass); !written.isOk()) return Result::retry(written);
  if (changed) warn(pass, reason, "Schedule", message);
  return requeue.count() > 0 ? Result::requeueAfter(requeue) : Result::done();
}

Result VmReconciler::refuseNameConflict(Pass& pass, const std::string& kind) {
  return refuse(pass, "InfraNameConflict",
                kind + " " + pass.key +
                    " exists but is not owned by this VirtualMachine; rename or delete it",
                30s);  // an unlabelled object's deletion is no event the informers see
}

StatusOr<rapidjson::Document> VmReconciler::applyInfra(const Pass& pass, const InfraKind& kind,
                                                       const rapidjson::Value& desired,
                                                       bool creating) {
  const std::string& ns = pass.vm.metadata.namespace_;
  const std::string& name = pass.vm.metadata.name;
  std::string body = json::serialize(desired);
  // The informer sees only objects labelled as ours, so "not in the cache" may still be an
  // object of this name that someone else made. A forced apply would take it over; an
  // unforced one creates the object when there is none (one request, no read: issue #23
  // counts requests per VM) and conflicts with another writer's fields. A conflict is rare:
  // it costs one read to tell the VM's own object (cache lag, a field a person edited) from
  // someone else's.
  auto applied = client_.apply(kind.type, ns, name, body,
                               {.field_manager = kFieldManager, .force = !creating});
  if (!creating || applied.ok() || !kube::isConflict(applied.status())) return applied;
  auto existing = client_.get(kind.type, ns, name);
  if (!existing.ok()) return existing.status();
  if (!ownedBy(*existing, pass.vm.metadata.uid)) {
    return error(Code::kFailedPrecondition, "InfraNameConflict", applied.status().message());
  }
  return client_.apply(kind.type, ns, name, body, {.field_manager = kFieldManager, .force = true});
}

Result VmReconciler::reconcile(const runtime::Request& request) {
  auto log = common::logger("controller");
  Pass pass;
  pass.key = request.key();
  // Our last write is not in the cache yet: acting now would repeat it. The cache's update
  // brings the key back; the requeue covers an event that never comes.
  if (!expectations_.satisfied(pass.key)) return Result::requeueAfter(250ms);
  pass.object = caches_.vms->get(pass.key);
  if (!pass.object) return Result::done();
  auto vm = decode<api::VirtualMachine>(pass.object);
  if (!vm.ok()) {
    log->error("virtualmachine {}: cannot decode: {}", pass.key, vm.status().message());
    return Result::terminal(vm.status());
  }
  pass.vm = std::move(vm).value();
  pass.status = pass.vm.status;
  pass.generation = pass.vm.metadata.generation;
  pass.now = runtime::rfc3339Now();

  // Paused comes first: a paused VM is neither changed nor finalized.
  if (pass.vm.spec.paused) {
    setCondition(pass.status.conditions, conditions::kReady, "False", "Paused",
                 "reconciliation paused via spec.paused", pass.generation, pass.now);
    auto written = writeStatus(pass);
    return written.isOk() ? Result::done() : Result::retry(written);
  }
  if (!pass.vm.metadata.deletion_timestamp.empty()) return finalize(pass);
  if (!runtime::hasFinalizer(*pass.object, kVmFinalizer)) {
    // From the cached copy: its resourceVersion guards the patch, so no read comes first.
    auto added =
        runtime::addFinalizer(client_, resources::kVirtualMachine, *pass.object, kVmFinalizer);
    if (!added.isOk()) return Result::retry(added);
  }

  auto class_object = caches_.classes->get(pass.vm.spec.class_ref.name);
  if (!class_object)
    return refuse(pass, "ClassNotFound", "VMClass " + pass.vm.spec.class_ref.name + " not found",
                  0s);
  auto vm_class = decode<api::VMClass>(class_object);
  if (!vm_class.ok())
    return refuse(pass, "ClassInvalid",
                  "VMClass " + pass.vm.spec.class_ref.name + ": " + vm_class.status().message(),
                  0s);
  auto image_object = caches_.images->get(pass.vm.spec.image_ref.name);
  if (!image_object)
    return refuse(pass, "ImageNotFound", "VMImage " + pass.vm.spec.image_ref.name + " not found",
                  0s);
  auto image = decode<api::VMImage>(image_object);
  if (!image.ok())
    return refuse(pass, "ImageInvalid",
                  "VMImage " + pass.vm.spec.image_ref.name + ": " + image.status().message(), 0s);

  SchedulingInput input{.vm = &pass.vm, .vm_class = &*vm_class, .image = &*image};
  for (const auto& object : caches_.providers->byIndex("namespace", pass.vm.metadata.namespace_)) {
    auto provider = decode<api::Provider>(object);
    if (provider.ok()) {
      input.providers.push_back(std::move(provider).value());
    } else {
      log->warn("provider {}: cannot decode: {}", runtime::objectKey(*object),
                provider.status().message());
    }
  }
  // Siblings matter only to anti-affinity; decoding them for every VM would be quadratic.
  if (!pass.vm.spec.placement.anti_affinity.empty()) {
    for (const auto& object : caches_.vms->byIndex("namespace", pass.vm.metadata.namespace_)) {
      auto sibling = decode<api::VirtualMachine>(object);
      if (sibling.ok()) input.siblings.push_back(std::move(sibling).value());
    }
  }
  auto scheduled = schedule(input);
  if (!scheduled.scheduled) {
    setCondition(pass.status.conditions, conditions::kScheduled, "False", scheduled.reason,
                 scheduled.message, pass.generation, pass.now);
    setCondition(pass.status.conditions, conditions::kReady, "False", "Scheduling",
                 "scheduling not yet successful: " + scheduled.message, pass.generation, pass.now);
    bool changed = encodeStatus(pass.status) != encodeStatus(pass.vm.status);
    if (auto written = writeStatus(pass); !written.isOk()) return Result::retry(written);
    if (changed) warn(pass, scheduled.reason, "Schedule", scheduled.message);
    return Result::done();  // Provider, image and class watches bring it back
  }
  return reconcilePlaced(pass, scheduled.placement);
}

Result VmReconciler::reconcilePlaced(Pass& pass, const Placement& placement) {
  auto log = common::logger("controller");
  const auto& vm = pass.vm;
  const std::string& ns = vm.metadata.namespace_;

  // Every kind any ProviderClass publishes gets a cache, so infra CRs of a previous placement
  // on another backend are seen (and torn down) too.
  runtime::Object desired_class;
  for (const auto& object : caches_.provider_classes->list()) {
    for (const auto& kind : publishedMachineKinds(*object)) (void)infra_.ensure(kind);
    if (json::stringOr(object.get(), "metadata.name") == placement.provider_class)
      desired_class = object;
  }
  auto placed_on =
      caches_.providers->get(placement.provider_namespace + "/" + placement.provider_name);
  auto desired_kind =
      chooseMachineKind(desired_class ? desired_class.get() : nullptr,
                        placed_on ? placed_on.get() : nullptr, placement.provider_class);
  if (!desired_kind.ok()) {
    return refuse(pass, "InfraBuildFailed", desired_kind.status().message(), 0s);
  }
  auto infra_kind = infra_.ensure(*desired_kind);
  if (!infra_kind.ok()) {
    return refuse(pass, "InfraBuildFailed",
                  "infra kind " + desired_kind->api_version + " " + desired_kind->kind + ": " +
                      infra_kind.status().message(),
                  30s);
  }

  // The previous placement's kind, from status.infrastructureRef, is watched even when no
  // ProviderClass publishes it any more (its class deleted, then this process restarted):
  // unseen, its object would be left running beside the new one.
  if (const auto& ref = vm.status.infrastructure_ref; ref && !ref->kind.empty()) {
    auto known = infra_.known();
    bool watched = std::any_of(known.begin(), known.end(), [&](const InfraKind& k) {
      return k.kind.group() == ref->api_group && k.kind.kind == ref->kind;
    });
    if (!watched) {
      auto version = preferredApiVersion(client_, ref->api_group);
      if (version.ok()) {
        auto ensured = infra_.ensure(MachineKind{*version, ref->kind});
        if (!ensured.ok() && ensured.status().reason() != "KindNotServed")
          return Result::retry(ensured.status());
      } else if (version.status().reason() != "KindNotServed" &&
                 !kube::isNotFound(version.status())) {
        return Result::retry(version.status());
      }
    }
  }

  // Infra CRs this VM owns that do not match the placement: a backend swap.
  std::vector<std::pair<InfraKind, runtime::Object>> stale;
  runtime::Object live;
  for (const auto& kind : infra_.known()) {
    if (!kind.informer->hasSynced()) return Result::requeueAfter(1s);
    auto object = kind.informer->get(pass.key);
    if (!object) continue;
    if (!ownedBy(*object, vm.metadata.uid)) {
      if (kind.key() == infra_kind->key()) return refuseNameConflict(pass, kind.kind.kind);
      continue;
    }
    bool same = kind.key() == infra_kind->key() &&
                json::stringOr(object.get(), "spec.providerRef.name") == placement.provider_name &&
                json::stringOr(object.get(), "spec.failureDomain") == placement.failure_domain;
    if (same) {
      live = object;
    } else {
      stale.emplace_back(kind, object);
    }
  }

  setCondition(pass.status.conditions, conditions::kScheduled, "True", "Scheduled",
               "VirtualMachine scheduled successfully", pass.generation, pass.now);
  if (!stale.empty()) {
    const auto& [old_kind, old_object] = stale.front();
    std::string old_provider = json::stringOr(old_object.get(), "spec.providerRef.name");
    bool provider_changed =
        old_provider != placement.provider_name || old_kind.key() != infra_kind->key();
    std::string reason = provider_changed ? "ProviderChanged" : "FailureDomainChanged";
    std::string message = provider_changed
                              ? "placement moves from provider '" + old_provider + "' to '" +
                                    placement.provider_name + "'"
                              : "placement moves from failure domain '" +
                                    json::stringOr(old_object.get(), "spec.failureDomain") +
                                    "' to '" + placement.failure_domain + "'";
    auto annotation = vm.metadata.annotations.find(kMigrateAnnotation);
    bool migrate_requested =
        annotation != vm.metadata.annotations.end() && annotation->second == "true";
    if (vm.spec.migration_policy == "never" ||
        (vm.spec.migration_policy == "manual" && !migrate_requested)) {
      std::string hint = vm.spec.migration_policy == "never"
                             ? " (migrationPolicy never: the VM stays where it is)"
                             : " (migrationPolicy manual: annotate banlieue.io/migrate=true)";
      setCondition(pass.status.conditions, conditions::kPlacementValid, "False", reason,
                   message + hint, pass.generation, pass.now);
      mirrorInfra(pass.status, observeInfra(*old_object), pass.generation, pass.now);
      bool changed = encodeStatus(pass.status) != encodeStatus(vm.status);
      if (auto written = writeStatus(pass); !written.isOk()) return Result::retry(written);
      if (changed) warn(pass, reason, "Migrate", message + hint);
      return Result::done();
    }
    // Recreate: remove every stale infra CR (its provider's finalizer removes the backend VM),
    // and create the new one only once they are gone.
    for (const auto& [kind, object] : stale) {
      if (!json::stringOr(object.get(), "metadata.deletionTimestamp").empty()) continue;
      auto removed =
          client_.remove(kind.type, ns, vm.metadata.name,
                         {.precondition_uid = json::stringOr(object.get(), "metadata.uid")});
      if (!removed.isOk() && !kube::isNotFound(removed)) return Result::retry(removed);
      log->info("virtualmachine {}: deleting {} for placement change ({})", pass.key,
                kind.kind.kind, message);
      if (events_ != nullptr) events_->normal(*pass.object, reason, "Migrate", message);
    }
    setCondition(pass.status.conditions, conditions::kPlacementValid, "False", reason, message,
                 pass.generation, pass.now);
    setCondition(pass.status.conditions, conditions::kMigrating, "True", reason,
                 "waiting for the previous infrastructure object to be deleted", pass.generation,
                 pass.now);
    mirrorInfra(pass.status, std::nullopt, pass.generation, pass.now);
    if (auto written = writeStatus(pass); !written.isOk()) return Result::retry(written);
    return Result::requeueAfter(5s);  // the infra watch usually brings it back sooner
  }

  // userData, read in the VM's namespace only when the VM names it, from a Secret only when the
  // Secret opted in; rendered, it goes to a Secret of the VM's, never into the infra object
  // (docs/adr/0026).
  std::optional<UserDataReference> user_data;
  auto ref = userDataRef(vm.spec);
  if (!ref.ok()) return refuse(pass, "InfraBuildFailed", ref.status().message(), 0s);
  if (ref->has_value()) {
    const auto& source = **ref;
    auto object = client_.get(
        source.secret ? kube::resources::kSecret : kube::resources::kConfigMap, ns, source.name);
    if (!object.ok()) {
      std::string what = (source.secret ? "Secret " : "ConfigMap ") + source.name;
      std::string message = kube::isNotFound(object.status())
                                ? what + " not found (" + source.field() + ")"
                                : what + ": " + object.status().message();
      return refuse(pass, "InfraBuildFailed", message, 30s);
    }
    if (source.secret && !optedInAsUserData(*object)) {
      return refuse(pass, "UserDataNotAllowed",
                    "Secret " + source.name + " (" + source.field() +
                        ") is not marked for use as userData: label it " + kUserDataOptInLabel +
                        "=true to let any VirtualMachine of this namespace boot with its content",
                    30s);  // no Secret watch: the label is noticed at the next check
    }
    auto text = extractUserData(*object, source);
    if (!text.ok()) return refuse(pass, "InfraBuildFailed", text.status().message(), 30s);
    auto written = writeRenderedUserData(pass, renderUserData(*text, vm));
    if (!written.ok()) {
      if (written.status().reason() == "UserDataSecretConflict") {
        return refuse(pass, "UserDataSecretConflict", written.status().message(), 30s);
      }
      return Result::retry(written.status());
    }
    user_data = std::move(written).value();
  }

  InfraBuildInput build{.vm = &vm,
                        .vm_class = nullptr,
                        .image = nullptr,
                        .provider = nullptr,
                        .placement = &placement,
                        .kind = *desired_kind,
                        .user_data = user_data};
  auto class_object = caches_.classes->get(vm.spec.class_ref.name);
  auto image_object = caches_.images->get(vm.spec.image_ref.name);
  auto provider_object = caches_.providers->get(ns + "/" + placement.provider_name);
  if (!class_object || !image_object || !provider_object) return Result::requeueAfter(1s);
  auto vm_class = decode<api::VMClass>(class_object);
  auto image = decode<api::VMImage>(image_object);
  auto provider = decode<api::Provider>(provider_object);
  if (!vm_class.ok() || !image.ok() || !provider.ok()) return Result::requeueAfter(1s);
  build.vm_class = &*vm_class;
  build.image = &*image;
  build.provider = &*provider;
  const rapidjson::Value* current = live ? live.get() : nullptr;
  build.finalizers = infraFinalizers(desired_class ? desired_class.get() : nullptr, current);
  auto desired = buildInfraObject(build);
  if (!desired.ok()) return refuse(pass, "InfraBuildFailed", desired.status().message(), 0s);

  rapidjson::Document applied_doc;
  if (current == nullptr || !infraUpToDate(*desired, *current)) {
    auto applied = applyInfra(pass, *infra_kind, *desired, /*creating=*/current == nullptr);
    if (!applied.ok()) {
      if (applied.status().reason() == "InfraNameConflict") {
        return refuseNameConflict(pass, infra_kind->kind.kind);
      }
      if (applied.status().code() == Code::kInvalidArgument) {
        return refuse(pass, "InfraBuildFailed",
                      infra_kind->kind.kind + " refused: " + applied.status().message(), 30s);
      }
      return Result::retry(applied.status());
    }
    applied_doc = std::move(applied).value();
    current = &applied_doc;
    expectations_.expect(pass.key, infra_kind->informer, pass.key,
                         json::stringOr(current, "metadata.resourceVersion"));
  }

  // Status: the placement, the reference, and the infra CR's report.
  api::ScheduledPlacement scheduled{.provider_name = placement.provider_name,
                                    .provider_class = placement.provider_class,
                                    .failure_domain = placement.failure_domain,
                                    .resolved_storage = placement.resolved_storage,
                                    .resolved_networks = placement.resolved_networks,
                                    .scheduled_at = pass.now};
  if (vm.status.scheduled && vm.status.scheduled->provider_name == scheduled.provider_name &&
      vm.status.scheduled->failure_domain == scheduled.failure_domain &&
      !vm.status.scheduled->scheduled_at.empty()) {
    scheduled.scheduled_at = vm.status.scheduled->scheduled_at;
  }
  pass.status.scheduled = scheduled;
  pass.status.infrastructure_ref = api::TypedObjectReference{
      .api_group = desired_kind->group(), .kind = desired_kind->kind, .name = vm.metadata.name};
  setCondition(pass.status.conditions, conditions::kPlacementValid, "True", "PlacementValid",
               "the infrastructure object matches the placement", pass.generation, pass.now);
  removeCondition(pass.status.conditions, conditions::kMigrating);
  mirrorInfra(pass.status, observeInfra(*current), pass.generation, pass.now);
  if (auto written = writeStatus(pass); !written.isOk()) return Result::retry(written);
  return Result::done();
}

StatusOr<UserDataReference> VmReconciler::writeRenderedUserData(const Pass& pass,
                                                                const std::string& text) {
  const auto& vm = pass.vm;
  const std::string& ns = vm.metadata.namespace_;
  const std::string name = renderedUserDataSecretName(vm.metadata.name);
  auto current = client_.get(kube::resources::kSecret, ns, name);
  if (current.ok()) {
    if (!ownedBy(*current, vm.metadata.uid)) {
      return error(Code::kFailedPrecondition, "UserDataSecretConflict",
                   "Secret " + name +
                       " exists but is not owned by this VirtualMachine, and its rendered "
                       "userData goes there; rename or delete that Secret");
    }
    if (renderedUserDataText(*current) == text) {
      return UserDataReference{name, json::stringOr(&*current, "metadata.resourceVersion")};
    }
  } else if (!kube::isNotFound(current.status())) {
    return current.status();
  }
  auto applied = client_.apply(kube::resources::kSecret, ns, name,
                               json::serialize(renderedUserDataSecret(vm, text)),
                               {.field_manager = kFieldManager, .force = true});
  if (!applied.ok()) return applied.status();
  return UserDataReference{name, json::stringOr(&*applied, "metadata.resourceVersion")};
}

std::string VmReconciler::providerCannotFinalize(const std::string& ns,
                                                 const std::string& provider_name) {
  if (provider_name.empty()) return {};
  auto object = caches_.providers->get(ns + "/" + provider_name);
  if (!object) {
    return "Provider " + provider_name +
           " does not exist, so nothing removes the backend machine (once it is gone, remove the "
           "object's finalizer by hand)";
  }
  auto provider = decode<api::Provider>(object);
  if (!provider.ok()) return {};
  for (const auto& c : provider->status.conditions) {
    if (c.type != conditions::kReady) continue;
    if (c.status == "True") return {};
    return "Provider " + provider_name + " is not Ready (" + c.reason +
           (c.message.empty() ? "" : ": " + c.message) + ")";
  }
  return "Provider " + provider_name + " has not reported Ready (is its workload running?)";
}

Result VmReconciler::finalize(Pass& pass) {
  auto log = common::logger("controller");
  if (!runtime::hasFinalizer(*pass.object, kVmFinalizer)) return Result::done();
  const auto& vm = pass.vm;
  const std::string& ns = vm.metadata.namespace_;

  // Every kind that could hold an infra CR of this VM: those ProviderClasses publish, those
  // already watched, and the one the status points at (its ProviderClass may be gone).
  std::map<std::string, MachineKind> kinds;
  std::vector<std::string> unknown;
  for (const auto& object : caches_.provider_classes->list()) {
    for (const auto& kind : publishedMachineKinds(*object)) {
      kinds[kind.api_version + "/" + kind.kind] = kind;
    }
  }
  for (const auto& kind : infra_.known()) kinds[kind.key()] = kind.kind;
  if (const auto& ref = vm.status.infrastructure_ref; ref && !ref->kind.empty()) {
    auto version = preferredApiVersion(client_, ref->api_group);
    if (version.ok()) {
      kinds[*version + "/" + ref->kind] = MachineKind{*version, ref->kind};
    } else if (version.status().reason() != "KindNotServed" &&
               !kube::isNotFound(version.status())) {
      unknown.push_back(ref->kind + ": " + version.status().message());
    }
  }

  std::vector<std::string> remaining;
  std::vector<std::string> blocked;  // why a remaining object may never go
  kube::KindResolver resolver(client_);
  for (const auto& [key, kind] : kinds) {
    auto type = resolver.resolve(kind.api_version, kind.kind);
    if (!type.ok()) {
      // A kind the API server does not serve holds no objects; any other error is not
      // knowledge of absence and keeps the finalizer.
      if (type.status().reason() != "KindNotServed")
        unknown.push_back(kind.kind + ": " + type.status().message());
      continue;
    }
    auto object = client_.get(*type, ns, vm.metadata.name);
    if (!object.ok()) {
      // A kind this controller may not read is one it never made objects of, unless the VM
      // records it as its own (its roles were taken away since): only then is it unknown.
      const bool recorded = vm.status.infrastructure_ref &&
                            vm.status.infrastructure_ref->kind == kind.kind &&
                            vm.status.infrastructure_ref->api_group == kind.group();
      if (!kube::isNotFound(object.status()) && (recorded || !kube::isForbidden(object.status())))
        unknown.push_back(kind.kind + ": " + object.status().message());
      continue;
    }
    if (!ownedBy(*object, vm.metadata.uid)) continue;  // same name, someone else's object
    std::string provider_name = json::stringOr(&*object, "spec.providerRef.name");
    remaining.push_back(kind.kind + " " + vm.metadata.name +
                        (provider_name.empty() ? "" : " (Provider " + provider_name + ")"));
    if (auto why = providerCannotFinalize(ns, provider_name); !why.empty()) blocked.push_back(why);
    if (json::stringOr(&*object, "metadata.deletionTimestamp").empty()) {
      auto removed = client_.remove(*type, ns, vm.metadata.name,
                                    {.precondition_uid = json::stringOr(&*object, "metadata.uid")});
      if (!removed.isOk() && !kube::isNotFound(removed))
        unknown.push_back(kind.kind + " delete: " + removed.message());
    }
  }
  if (!remaining.empty() || !unknown.empty()) {
    std::string detail;
    if (!remaining.empty()) {
      detail = "waiting for ";
      for (size_t i = 0; i < remaining.size(); ++i) detail += (i == 0 ? "" : ", ") + remaining[i];
      detail += " to be deleted, each after its backend machine";
    }
    for (const auto& b : blocked) detail += "; " + b;
    for (const auto& u : unknown) detail += (detail.empty() ? "" : "; ") + u;
    log->info("virtualmachine {}: waiting before releasing finalizer: {}", pass.key, detail);
    // Ready says why the VM is still here: a deletion that cannot progress is named.
    std::string reason = !unknown.empty()   ? "InfrastructureUnknown"
                         : !blocked.empty() ? "DeletionBlocked"
                                            : "Deleting";
    setCondition(pass.status.conditions, conditions::kReady, "False", reason, detail,
                 pass.generation, pass.now);
    bool changed = encodeStatus(pass.status) != encodeStatus(vm.status);
    if (auto written = writeStatus(pass); !written.isOk()) return Result::retry(written);
    if (changed && reason != "Deleting") warn(pass, reason, "Delete", detail);
    return Result::requeueAfter(unknown.empty() ? 5s : 15s);
  }
  auto removed =
      runtime::removeFinalizer(client_, resources::kVirtualMachine, *pass.object, kVmFinalizer);
  if (!removed.isOk()) return Result::retry(removed);
  log->info("virtualmachine {}: infrastructure gone, finalizer released", pass.key);
  return Result::done();
}

}  // namespace banlieue::controller
