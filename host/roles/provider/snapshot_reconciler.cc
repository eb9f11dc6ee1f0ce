#include "host/roles/provider/snapshot_reconciler.h"

#include "host/common/logging.h"
#include "host/plugin/payload_schemas.h"
#include "host/plugin/status_policy.h"
#include "host/roles/common/snapshot_binding.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;
using runtime::Result;
using namespace std::chrono_literals;

constexpr auto kNotConnectedRetry = 30s;
constexpr auto kNotProvisionedRetry = 30s;

using runtime::generationOf;

// The snapshot slot's request (sdk/schemas/snapshot.request.json).
std::string slotRequest(const char* action, const rapidjson::Value& machine,
                        const rapidjson::Value& snapshot, const std::string& snapshot_ref,
                        const std::string& token) {
  rapidjson::Document request(rapidjson::kObjectType);
  auto& a = request.GetAllocator();
  request.AddMember("action", rapidjson::StringRef(action), a);
  request.AddMember("kind", json::stringValue(json::stringOr(&machine, "kind"), a), a);
  request.AddMember("machine", rapidjson::Value(machine, a), a);
  rapidjson::Value snap(rapidjson::kObjectType);
  const std::string uid = json::stringOr(&snapshot, "metadata.uid");
  snap.AddMember(
      "name",
      json::stringValue(backendSnapshotName(json::stringOr(&snapshot, "metadata.name"), uid), a),
      a);
  snap.AddMember("uid", json::stringValue(uid, a), a);
  snap.AddMember("memory", json::boolean(&snapshot, "spec.memory", false), a);
  snap.AddMember("description", json::stringValue(json::stringOr(&snapshot, "spec.description"), a),
                 a);
  request.AddMember("snapshot", snap, a);
  if (!snapshot_ref.empty()) {
    request.AddMember("snapshotRef", json::stringValue(snapshot_ref, a), a);
  }
  if (!token.empty()) {
    rapidjson::Value operation(rapidjson::kObjectType);
    operation.AddMember("token", json::stringValue(token, a), a);
    request.AddMember("operation", operation, a);
  }
  return json::serialize(request);
}

// Server-side applies `status` (the fields this Provider owns) to the object's status.
Status applyStatus(RuntimeContext& context, const kube::ResourceType& type, const char* kind,
                   const rapidjson::Value& object, rapidjson::Document& status) {
  rapidjson::Document body(rapidjson::kObjectType);
  auto& a = body.GetAllocator();
  body.AddMember("apiVersion", "banlieue.io/v1alpha1", a);
  body.AddMember("kind", rapidjson::StringRef(kind), a);
  rapidjson::Value metadata(rapidjson::kObjectType);
  metadata.AddMember("name", json::stringValue(json::stringOr(&object, "metadata.name"), a), a);
  metadata.AddMember("namespace",
                     json::stringValue(json::stringOr(&object, "metadata.namespace"), a), a);
  body.AddMember("metadata", metadata, a);
  body.AddMember("status", rapidjson::Value(status, a), a);
  auto applied = context.client.apply(
      type, json::stringOr(&object, "metadata.namespace"), json::stringOr(&object, "metadata.name"),
      json::serialize(body),
      {.field_manager = context.fieldManager(), .force = true, .subresource = "status"});
  return applied.ok() ? Status::ok() : applied.status();
}

// The status this Provider writes: the fields it owns as they are (a server-side apply drops
// what its field manager owned and no longer sends), and its one condition set as given;
// callers then change the fields that moved.
rapidjson::Document statusWith(const rapidjson::Value& object, const std::string& type,
                               const std::string& condition_status, const std::string& reason,
                               const std::string& message) {
  rapidjson::Document status(rapidjson::kObjectType);
  auto& a = status.GetAllocator();
  for (const char* owned : {"snapshotRef", "createdAt", "memory", "operationToken", "restoredAt"}) {
    if (const auto* value = json::find(&object, std::string("status.") + owned)) {
      status.AddMember(rapidjson::StringRef(owned), rapidjson::Value(*value, a), a);
    }
  }
  rapidjson::Value conditions(rapidjson::kArrayType);
  // From the object's own conditions, so lastTransitionTime moves only with the status.
  if (const auto* current = json::find(&object, "status.conditions");
      current != nullptr && current->IsArray()) {
    for (const auto& c : current->GetArray()) {
      if (json::stringOr(&c, "type") == type) conditions.PushBack(rapidjson::Value(c, a), a);
    }
  }
  runtime::setCondition(conditions, a,
                        {type, condition_status, reason, message, generationOf(object)},
                        runtime::rfc3339Now());
  status.AddMember("conditions", conditions, a);
  status.AddMember("observedGeneration", generationOf(object), a);
  return status;
}

// Sets a field this Provider owns; "" leaves it out, which removes it (the apply drops what its
// field manager no longer sends), where an applied "" would reach a 1.20 apiserver as null.
void setString(rapidjson::Document& status, const char* name, const std::string& value) {
  auto& a = status.GetAllocator();
  status.RemoveMember(name);
  if (!value.empty()) status.AddMember(rapidjson::StringRef(name), json::stringValue(value, a), a);
}

// The reply body's status member, or null.
const rapidjson::Value* replyStatus(const rapidjson::Document& reply) {
  const auto* status = json::member(&reply, "status");
  return status != nullptr && status->IsObject() ? status : nullptr;
}

// When to look again after a failed call: never for what only a change can fix, on a steady
// poll for what waits on something else, with back-off otherwise.
Result afterFailure(const Status& failure) {
  if (failure.code() == Code::kUnimplemented || failure.code() == Code::kInvalidArgument ||
      failure.reason() == "SnapshotNotFound") {
    return Result::terminal(failure);
  }
  if (failure.reason() == "MachineNotProvisioned")
    return Result::requeueAfter(kNotProvisionedRetry);
  return Result::retry(failure);
}

}  // namespace

// ---- VirtualMachineSnapshot ----------------------------------------------------------------

Result SnapshotReconciler::reconcile(const runtime::Request& request) {
  auto object = snapshots_.get(request.key());
  if (!object) return Result::done();
  const auto& o = *object;
  auto machine_ref = boundMachine(o);
  if (!machine_ref || machine_ref->provider != context_.provider_name) return Result::done();
  auto machine = machines_.find(machine_ref->kind, request.ns + "/" + machine_ref->name);
  const bool deleting = json::find(&o, "metadata.deletionTimestamp") != nullptr;
  if (deleting) {
    if (!runtime::hasFinalizer(o, context_.finalizer())) return Result::done();
    return finalize(o, machine);
  }
  if (!runtime::hasFinalizer(o, context_.finalizer())) {
    // Before the create: a backend snapshot never exists without what removes it.
    if (auto st = runtime::addFinalizer(context_.client, kVirtualMachineSnapshotType, o,
                                        context_.finalizer());
        !st.isOk()) {
      return Result::retry(st);
    }
  }
  const std::string snapshot_ref = json::stringOr(&o, "status.snapshotRef");
  const std::string token = json::stringOr(&o, "status.operationToken");
  auto write = [&](rapidjson::Document& status) {
    return applyStatus(context_, kVirtualMachineSnapshotType, "VirtualMachineSnapshot", o, status);
  };
  if (!machine) {
    // The machine went (the VM was deleted or moved to another backend): so did its snapshots.
    auto status = statusWith(o, "Ready", "False", "MachineGone",
                             machine_ref->kind + " " + machine_ref->name +
                                 ", which this snapshot was taken of, no longer exists");
    if (auto st = write(status); !st.isOk()) return Result::retry(st);
    return Result::done();
  }
  if (!snapshot_ref.empty() && token.empty()) return Result::done();  // made: nothing to ask

  auto instance = context_.session.instance();
  if (!instance) {
    auto status = statusWith(o, "Ready", "False", "ProviderNotConnected",
                             "provider " + context_.provider_name +
                                 " is not connected to its backend (see the Provider's "
                                 "conditions)");
    if (auto st = write(status); !st.isOk()) return Result::retry(st);
    return Result::requeueAfter(kNotConnectedRetry);
  }
  const std::string machine_uid = json::stringOr(machine.get(), "metadata.uid");
  plugin::CallResult result;
  {
    auto lock = context_.lockMachine(machine_uid);
    result = instance->snapshot(
        slotRequest("create", *machine, o, "", token),
        context_.callOptions(machine_uid, "VirtualMachineSnapshot " + request.key()));
  }
  const bool in_progress = result.code() == BANLIEUE_IN_PROGRESS;
  if (!result.ok() && !in_progress) {
    auto failure = statusOf(result);
    auto status = statusWith(o, "Ready", "False", failure.reason(), failure.message());
    setString(status, "operationToken", "");
    if (auto st = write(status); !st.isOk()) return Result::retry(st);
    context_.events.warning(o, failure.reason(), "Snapshot", failure.message());
    return afterFailure(failure);
  }
  rapidjson::Document reply;
  reply.Parse(result.outcome.body.empty() ? "{}" : result.outcome.body.c_str());
  if (reply.HasParseError() ||
      !plugin::validatePayload("snapshot.response",
                               result.outcome.body.empty() ? "{}" : result.outcome.body)
           .isOk()) {
    auto status = statusWith(o, "Ready", "False", "PluginProtocolError",
                             "the plugin's snapshot reply does not match "
                             "sdk/schemas/snapshot.response.json");
    if (auto st = write(status); !st.isOk()) return Result::retry(st);
    return Result::requeueAfter(60s);
  }
  if (in_progress) {
    const std::string next_token = json::stringOr(&reply, "operation.token");
    std::string description = json::stringOr(&reply, "operation.description");
    auto status =
        statusWith(o, "Ready", "False", "Creating",
                   description.empty() ? "the backend is taking the snapshot" : description);
    setString(status, "operationToken", next_token);
    if (auto st = write(status); !st.isOk()) return Result::retry(st);
    return Result::requeueAfter(
        plugin::clampRequeueHint(result.outcome.requeue_after_ms, plugin::kDefaultPollInterval));
  }
  const auto* made = replyStatus(reply);
  const std::string made_ref = json::stringOr(made, "snapshotRef");
  if (made_ref.empty()) {
    auto status = statusWith(o, "Ready", "False", "PluginProtocolError",
                             "the plugin answered OK to a snapshot create without "
                             "status.snapshotRef");
    if (auto st = write(status); !st.isOk()) return Result::retry(st);
    return Result::requeueAfter(60s);
  }
  auto status =
      statusWith(o, "Ready", "True", "Created",
                 "snapshot " + made_ref + " of " + machine_ref->kind + " " + machine_ref->name);
  setString(status, "snapshotRef", made_ref);
  setString(status, "createdAt", json::stringOr(made, "createdAt"));
  setString(status, "operationToken", "");
  status.RemoveMember("memory");
  status.AddMember("memory", json::boolean(made, "memory", json::boolean(&o, "spec.memory", false)),
                   status.GetAllocator());
  if (auto st = write(status); !st.isOk()) return Result::retry(st);
  context_.events.normal(o, "Created", "Snapshot",
                         "the backend took snapshot " + made_ref + " of " + machine_ref->name);
  return Result::done();
}

Result SnapshotReconciler::finalize(const rapidjson::Value& o, const runtime::Object& machine) {
  auto release = [&] {
    auto st = runtime::removeFinalizer(context_.client, kVirtualMachineSnapshotType, o,
                                       context_.finalizer());
    return st.isOk() ? Result::done() : Result::retry(st);
  };
  // Every backend removes a machine's snapshots with the machine.
  if (!machine) return release();
  auto instance = context_.session.instance();
  if (!instance) return Result::requeueAfter(kNotConnectedRetry);
  std::string snapshot_ref = json::stringOr(&o, "status.snapshotRef");
  const std::string machine_uid = json::stringOr(machine.get(), "metadata.uid");
  const std::string what = "VirtualMachineSnapshot " + runtime::objectKey(o);
  auto lock = context_.lockMachine(machine_uid);
  if (snapshot_ref.empty()) {
    // Its create may have run without its answer being stored (a crash): the backend's list,
    // by the name create used, says whether there is anything to remove.
    auto listed = instance->snapshot(slotRequest("list", *machine, o, "", ""),
                                     context_.callOptions(machine_uid, what));
    if (!listed.ok()) {
      auto failure = statusOf(listed);
      if (failure.code() == Code::kUnimplemented) return release();  // never made one
      return Result::retry(failure);
    }
    auto reply = json::parse(listed.outcome.body.empty() ? "{}" : listed.outcome.body, "reply");
    const std::string name = backendSnapshotName(json::stringOr(&o, "metadata.name"),
                                                 json::stringOr(&o, "metadata.uid"));
    if (const auto* list = json::find(&reply, "status.snapshots"); list && list->IsArray()) {
      for (const auto& entry : list->GetArray()) {
        if (json::stringOr(&entry, "name") == name)
          snapshot_ref = json::stringOr(&entry, "snapshotRef");
      }
    }
    if (snapshot_ref.empty()) return release();
  }
  auto result = instance->snapshot(
      slotRequest("delete", *machine, o, snapshot_ref, json::stringOr(&o, "status.operationToken")),
      context_.callOptions(machine_uid, what));
  if (result.code() == BANLIEUE_IN_PROGRESS) {
    auto reply = json::parse(result.outcome.body, "reply");
    auto status =
        statusWith(o, "Ready", "False", "Deleting", "the backend is removing the snapshot");
    setString(status, "operationToken", json::stringOr(&reply, "operation.token"));
    if (auto st =
            applyStatus(context_, kVirtualMachineSnapshotType, "VirtualMachineSnapshot", o, status);
        !st.isOk()) {
      return Result::retry(st);
    }
    return Result::requeueAfter(
        plugin::clampRequeueHint(result.outcome.requeue_after_ms, plugin::kDefaultPollInterval));
  }
  if (!result.ok()) {
    auto failure = statusOf(result);
    context_.events.warning(o, failure.reason(), "Delete", failure.message());
    return Result::retry(failure);
  }
  context_.events.normal(o, "Deleted", "Delete", "the backend removed snapshot " + snapshot_ref);
  return release();
}

// ---- VirtualMachineRestore -----------------------------------------------------------------

Result RestoreReconciler::reconcile(const runtime::Request& request) {
  auto object = restores_.get(request.key());
  if (!object || json::find(object.get(), "metadata.deletionTimestamp") != nullptr) {
    return Result::done();
  }
  const auto& o = *object;
  const auto* complete = [&]() -> const rapidjson::Value* {
    const auto* conditions = json::find(&o, "status.conditions");
    if (conditions == nullptr || !conditions->IsArray()) return nullptr;
    for (const auto& c : conditions->GetArray()) {
      if (json::stringOr(&c, "type") == "Complete") return &c;
    }
    return nullptr;
  }();
  if (complete != nullptr && json::stringOr(complete, "status") == "True") {
    return Result::done();  // a restore is performed once
  }
  auto write = [&](rapidjson::Document& status) {
    return applyStatus(context_, kVirtualMachineRestoreType, "VirtualMachineRestore", o, status);
  };
  auto snapshot = snapshots_.get(request.ns + "/" + json::stringOr(&o, "spec.snapshotName"));
  auto machine_ref = snapshot ? boundMachine(*snapshot) : std::nullopt;
  const std::string snapshot_ref =
      snapshot ? json::stringOr(snapshot.get(), "status.snapshotRef") : std::string();
  if (!machine_ref || machine_ref->provider != context_.provider_name || snapshot_ref.empty()) {
    return Result::requeueAfter(30s);  // the controller's binding says why on the object
  }
  auto machine = machines_.find(machine_ref->kind, request.ns + "/" + machine_ref->name);
  if (!machine) {
    auto status = statusWith(o, "Complete", "False", "MachineGone",
                             machine_ref->kind + " " + machine_ref->name +
                                 ", which the snapshot was taken of, no longer exists");
    if (auto st = write(status); !st.isOk()) return Result::retry(st);
    return Result::done();
  }
  auto instance = context_.session.instance();
  if (!instance) {
    auto status =
        statusWith(o, "Complete", "False", "ProviderNotConnected",
                   "provider " + context_.provider_name + " is not connected to its backend");
    if (auto st = write(status); !st.isOk()) return Result::retry(st);
    return Result::requeueAfter(kNotConnectedRetry);
  }
  const std::string machine_uid = json::stringOr(machine.get(), "metadata.uid");
  plugin::CallResult result;
  {
    auto lock = context_.lockMachine(machine_uid);
    result = instance->snapshot(
        slotRequest("revert", *machine, *snapshot, snapshot_ref,
                    json::stringOr(&o, "status.operationToken")),
        context_.callOptions(machine_uid, "VirtualMachineRestore " + request.key()));
  }
  if (result.code() == BANLIEUE_IN_PROGRESS) {
    auto reply = json::parse(result.outcome.body, "reply");
    auto status =
        statusWith(o, "Complete", "False", "Restoring",
                   "the backend is reverting " + machine_ref->name + " to " + snapshot_ref);
    setString(status, "operationToken", json::stringOr(&reply, "operation.token"));
    if (auto st = write(status); !st.isOk()) return Result::retry(st);
    return Result::requeueAfter(
        plugin::clampRequeueHint(result.outcome.requeue_after_ms, plugin::kDefaultPollInterval));
  }
  if (!result.ok()) {
    auto failure = statusOf(result);
    auto status = statusWith(o, "Complete", "False", failure.reason(), failure.message());
    setString(status, "operationToken", "");
    if (auto st = write(status); !st.isOk()) return Result::retry(st);
    context_.events.warning(o, failure.reason(), "Restore", failure.message());
    return afterFailure(failure);
  }
  auto status =
      statusWith(o, "Complete", "True", "Restored",
                 machine_ref->kind + " " + machine_ref->name + " is at snapshot " + snapshot_ref);
  setString(status, "operationToken", "");
  setString(status, "restoredAt", runtime::rfc3339Now());
  if (auto st = write(status); !st.isOk()) return Result::retry(st);
  context_.events.normal(o, "Restored", "Restore",
                         machine_ref->name + " reverted to snapshot " + snapshot_ref);
  // The revert left the machine as the snapshot had it (often powered off): its reconcile
  // brings it back to its spec.
  machines_.wake(machine_ref->kind, request.ns + "/" + machine_ref->name);
  return Result::done();
}

}  // namespace banlieue::roles::provider
