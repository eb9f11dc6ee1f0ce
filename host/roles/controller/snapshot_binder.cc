#include "host/roles/controller/snapshot_binder.h"

#include "host/common/logging.h"
#include "host/roles/common/snapshot_binding.h"
#include "host/roles/controller/infra_builder.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

namespace banlieue::controller {
namespace {

namespace json = sdk::json;
using runtime::Result;
using namespace std::chrono_literals;

// The reasons only this binder writes: the condition is the binder's while it carries one, and
// goes once the object is bound (the provider's controller writes it from then on).
bool isBinderReason(const std::string& reason) {
  for (const char* r : {"VirtualMachineNotFound", "VirtualMachineDeleting", "WaitingForMachine",
                        "SnapshotNotFound", "SnapshotOfAnotherMachine", "SnapshotNotReady"}) {
    if (reason == r) return true;
  }
  return false;
}

// metadata.labels[key]: label keys hold dots and slashes, so not a json::find path.
std::string label(const rapidjson::Value& object, const char* key) {
  const auto* labels = json::find(&object, "metadata.labels");
  if (labels == nullptr || !labels->IsObject()) return {};
  auto it = labels->FindMember(key);
  return it != labels->MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}

}  // namespace

std::vector<std::string> SnapshotBinder::namingKeys(const runtime::Object& target) const {
  const std::string ns = json::stringOr(target.get(), "metadata.namespace");
  const std::string name = json::stringOr(target.get(), "metadata.name");
  const char* field = kind_ == Kind::kSnapshot ? "spec.virtualMachineName" : "spec.snapshotName";
  std::vector<std::string> keys;
  for (const auto& object : objects_.byIndex("namespace", ns)) {
    if (json::stringOr(object.get(), field) == name)
      keys.push_back(ns + "/" + json::stringOr(object.get(), "metadata.name"));
  }
  return keys;
}

Status SnapshotBinder::applyStatus(const rapidjson::Value& object, const rapidjson::Value& status) {
  const bool snapshot = kind_ == Kind::kSnapshot;
  rapidjson::Document body(rapidjson::kObjectType);
  auto& a = body.GetAllocator();
  body.AddMember("apiVersion", "banlieue.io/v1alpha1", a);
  body.AddMember(
      "kind", rapidjson::StringRef(snapshot ? "VirtualMachineSnapshot" : "VirtualMachineRestore"),
      a);
  rapidjson::Value metadata(rapidjson::kObjectType);
  metadata.AddMember("name", json::stringValue(json::stringOr(&object, "metadata.name"), a), a);
  metadata.AddMember("namespace",
                     json::stringValue(json::stringOr(&object, "metadata.namespace"), a), a);
  body.AddMember("metadata", metadata, a);
  body.AddMember("status", rapidjson::Value(status, a), a);
  auto applied = client_.apply(
      snapshot ? roles::kVirtualMachineSnapshotType : roles::kVirtualMachineRestoreType,
      json::stringOr(&object, "metadata.namespace"), json::stringOr(&object, "metadata.name"),
      json::serialize(body),
      {.field_manager = kFieldManager, .force = true, .subresource = "status"});
  return applied.ok() ? Status::ok() : applied.status();
}

Result SnapshotBinder::reconcile(const runtime::Request& request) {
  auto object = objects_.get(request.key());
  if (!object || json::find(object.get(), "metadata.deletionTimestamp") != nullptr) {
    return Result::done();  // a bound object's provider finalizes it; an unbound one just goes
  }
  const bool snapshot = kind_ == Kind::kSnapshot;
  const char* named_field = snapshot ? "spec.virtualMachineName" : "spec.snapshotName";
  auto named = named_.get(request.ns + "/" + json::stringOr(object.get(), named_field));
  auto binding = snapshot ? roles::bindSnapshot(*object, named.get())
                          : roles::bindRestore(*object, named.get());
  const std::string condition_type = snapshot ? "Ready" : "Complete";
  const auto* current = runtime::condition(*object, condition_type);

  if (!binding.machine) {
    if (current != nullptr && json::stringOr(current, "reason") == binding.reason &&
        json::stringOr(current, "message") == binding.message) {
      return binding.retry ? Result::requeueAfter(60s) : Result::done();
    }
    rapidjson::Document status(rapidjson::kObjectType);
    auto& a = status.GetAllocator();
    rapidjson::Value conditions(rapidjson::kArrayType);
    runtime::setCondition(conditions, a,
                          {condition_type, "False", binding.reason, binding.message,
                           json::integer(object.get(), "metadata.generation").value_or(0)},
                          runtime::rfc3339Now());
    status.AddMember("conditions", conditions, a);
    if (auto st = applyStatus(*object, status); !st.isOk()) return Result::retry(st);
    // The VirtualMachine or snapshot it waits for brings it back through the mapped watch;
    // the requeue is the safety net for a change the watch missed.
    return binding.retry ? Result::requeueAfter(60s) : Result::done();
  }

  const auto& machine = *binding.machine;
  const std::string provider_label = label(*object, roles::kSnapshotProviderLabel);
  if (provider_label != machine.provider) {
    rapidjson::Document patch(rapidjson::kObjectType);
    auto& a = patch.GetAllocator();
    rapidjson::Value labels(rapidjson::kObjectType);
    labels.AddMember(rapidjson::StringRef(roles::kSnapshotProviderLabel),
                     json::stringValue(machine.provider, a), a);
    rapidjson::Value metadata(rapidjson::kObjectType);
    metadata.AddMember("labels", labels, a);
    patch.AddMember("metadata", metadata, a);
    auto patched = client_.patch(
        snapshot ? roles::kVirtualMachineSnapshotType : roles::kVirtualMachineRestoreType,
        request.ns, request.name, kube::PatchType::kMerge, json::serialize(patch));
    if (!patched.ok()) return Result::retry(patched.status());
    common::logger("controller.snapshot")
        ->info("{} {} bound to Provider {} ({} {})", snapshot ? "snapshot" : "restore",
               request.key(), machine.provider, machine.kind, machine.name);
  }
  const bool binder_condition =
      current != nullptr && isBinderReason(json::stringOr(current, "reason"));
  if ((snapshot && !roles::boundMachine(*object)) || binder_condition) {
    // machineRef for a snapshot; the binder's own condition dropped (server-side apply removes
    // what this field manager owned and no longer sends).
    rapidjson::Document status(rapidjson::kObjectType);
    auto& a = status.GetAllocator();
    if (snapshot) {
      rapidjson::Value ref(rapidjson::kObjectType);
      ref.AddMember("apiGroup", json::stringValue(machine.api_group, a), a);
      ref.AddMember("kind", json::stringValue(machine.kind, a), a);
      ref.AddMember("name", json::stringValue(machine.name, a), a);
      ref.AddMember("providerName", json::stringValue(machine.provider, a), a);
      status.AddMember("machineRef", ref, a);
    }
    if (auto st = applyStatus(*object, status); !st.isOk()) return Result::retry(st);
  }
  return Result::done();
}

}  // namespace banlieue::controller
