#include "host/roles/provider/machine_reconciler.h"

#include "host/api/capi_contract.h"
#include "host/api/provider.h"
#include "host/common/fnv_hash.h"
#include "host/common/logging.h"
#include "host/plugin/payload_schemas.h"
#include "host/plugin/status_policy.h"
#include "host/roles/provider/machine_ready.h"
#include "host/roles/provider/status_writer.h"
#include "host/roles/provider/user_data_resolution.h"
#include "host/runtime/object_helpers.h"

#include <banlieue/sdk/json.h>

namespace banlieue::roles::provider {
namespace {

namespace json = sdk::json;

// The status as it is now, as a mutable copy (this manager owns every infra status field:
// the controller writes only spec).
rapidjson::Document currentStatus(const rapidjson::Value& object) {
  rapidjson::Document status(rapidjson::kObjectType);
  if (const auto* s = json::member(&object, "status"); s != nullptr && s->IsObject()) {
    status.CopyFrom(*s, status.GetAllocator());
  }
  return status;
}

void setMember(rapidjson::Document& doc, const char* name, rapidjson::Value value) {
  auto& a = doc.GetAllocator();
  if (auto it = doc.FindMember(name); it != doc.MemberEnd()) {
    it->value = std::move(value);
  } else {
    doc.AddMember(rapidjson::Value(name, a), std::move(value), a);
  }
}

// An infra object a banlieue VirtualMachine controls: the controller announces that VM's
// readiness on the VM itself (docs/adr/0047), so the provider's own "Provisioned" Event would be
// the same news on an object its user does not look at. Infra objects made otherwise (Cluster
// API, by hand) keep it.
bool ownedByVirtualMachine(const rapidjson::Value& object) {
  const auto* owner = runtime::controllerReference(object);
  return owner != nullptr && json::stringOr(owner, "kind") == "VirtualMachine" &&
         json::stringOr(owner, "apiVersion").rfind("banlieue.io/", 0) == 0;
}

// A plugin that breaks the protocol has a bug that does not go away in milliseconds: the object
// is tried again after a minute (an edit of it still brings it back at once), not in a loop of
// refused replies or refused status writes.
constexpr std::chrono::seconds kProtocolErrorRetry{60};
constexpr const char* kProtocolErrorNextTry = " (next try in 60 s)";

// Set by a user on an infrastructure object to lift its crash quarantine (crash_quarantine.h);
// removed by the provider when it does.
constexpr const char* kClearQuarantineAnnotation = "banlieue.io/clear-quarantine";

using runtime::generationOf;

// Why a reconcile reply breaks the protocol (sdk/schemas/reconcile.response.json; IN_PROGRESS
// needs the operation's token), or OK. ProviderProtocolError with the offending field; kInternal
// because a terminal code would drop the object's stored operation token.
// The conditions of a reply's status (the schema has checked them: Ready is not among them),
// and which of the object's conditions stay: with a list, it replaces the plugin's earlier one.
std::pair<std::vector<runtime::Condition>, KeepConditions> pluginConditions(
    const rapidjson::Value& reply, int64_t generation) {
  const auto* sent = json::find(&reply, "status.conditions");
  if (sent == nullptr || !sent->IsArray()) return {{}, KeepConditions::kAll};
  std::vector<runtime::Condition> out;
  for (const auto& c : sent->GetArray()) {
    out.push_back({json::stringOr(&c, "type"), json::stringOr(&c, "status"),
                   json::stringOr(&c, "reason"), json::stringOr(&c, "message"), generation});
  }
  return {std::move(out), KeepConditions::kOnlyUpdated};
}

Status protocolViolation(const std::string& body, bool in_progress) {
  auto valid = plugin::validatePayload("reconcile.response", body);
  if (valid.isOk() && in_progress) {
    rapidjson::Document reply;
    reply.Parse(body.c_str());
    if (json::stringOr(&reply, "operation.token").empty()) {
      valid = error(Code::kInvalidArgument, "MissingOperation",
                    "reconcile.response: IN_PROGRESS without operation.token");
    }
  }
  if (valid.isOk()) return valid;
  return error(
      Code::kInternal, "ProviderProtocolError",
      "the plugin's reply breaks the protocol: " + valid.message() + kProtocolErrorNextTry);
}

}  // namespace

MachineReconciler::MachineReconciler(RuntimeContext& context, kube::ResourceType type,
                                     std::string kind, runtime::Informer& machines,
                                     runtime::Informer& providers, MachineReconcilerOptions options)
    : context_(context),
      type_(std::move(type)),
      kind_(std::move(kind)),
      machines_(machines),
      providers_(providers),
      options_(options) {}

std::string MachineReconciler::callRequest(const rapidjson::Value& object,
                                           const std::optional<UserData>& user_data) const {
  rapidjson::Document request(rapidjson::kObjectType);
  auto& a = request.GetAllocator();
  rapidjson::Value copy(object, a);
  if (auto meta = copy.FindMember("metadata"); meta != copy.MemberEnd() && meta->value.IsObject()) {
    meta->value.RemoveMember("managedFields");
  }
  if (user_data) injectUserData(copy, *user_data, a);
  request.AddMember("object", copy, a);
  rapidjson::Value references(rapidjson::kObjectType);
  if (auto provider = providers_.get(context_.provider_namespace + "/" + context_.provider_name)) {
    references.AddMember("provider", rapidjson::Value(*provider, a), a);
  }
  request.AddMember("references", references, a);
  if (std::string token = json::stringOr(&object, "status.operationToken"); !token.empty()) {
    rapidjson::Value op(rapidjson::kObjectType);
    op.AddMember("token", json::stringValue(token, a), a);
    request.AddMember("operation", op, a);
  }
  return json::serialize(request);
}

runtime::Result MachineReconciler::reconcile(const runtime::Request& request) {
  // The cache's update event brings the key back once our write arrives; the requeue covers an
  // event that never comes (an expectation lapses after 10 s).
  if (!expectations_.satisfied(request.key()))
    return runtime::Result::requeueAfter(std::chrono::milliseconds(250));
  auto object = machines_.get(request.key());
  if (!object) {
    releaseCreateSlot(request.key());
    eraseInSync(request.key());
    return runtime::Result::done();
  }
  const rapidjson::Value& o = *object;
  // The label brought it here; the spec decides. An object naming another Provider is not ours.
  if (json::stringOr(&o, "spec.providerRef.name") != context_.provider_name ||
      request.ns != context_.provider_namespace) {
    return runtime::Result::done();
  }
  // Cluster API's pause (clusterctl move, an operator's hold): no backend call, not even a
  // deletion, until the annotation goes; its removal is an update that brings the key back.
  if (runtime::hasAnnotation(o, api::kPausedAnnotation)) {
    forgetInSync(request.key());  // resumed, it is called again
    return paused(o);
  }
  bool deleting = json::find(&o, "metadata.deletionTimestamp") != nullptr;
  if (deleting) {
    eraseInSync(request.key());
    if (!runtime::hasFinalizer(o, context_.finalizer())) {
      releaseCreateSlot(request.key());
      return runtime::Result::done();
    }
    return finalize(o);
  }
  if (!runtime::hasFinalizer(o, context_.finalizer())) {
    // Before any backend work: a VM must never exist without the finalizer that removes it.
    if (auto s = runtime::addFinalizer(context_.client, type_, o, context_.finalizer());
        !s.isOk()) {
      return runtime::Result::retry(s);
    }
  }

  // Read before the instance: a replacement between the two can only make a record of this
  // call useless (a call to the new instance), never keep one of the old instance's.
  const int connection = context_.session.generation();
  auto instance = context_.session.instance();
  if (!instance) {
    // Waiting on the Provider, not failing: a steady poll rather than the error back-off, which
    // would grow with the outage and leave the machine waiting long after the connection is
    // back (the connection also wakes every machine at once: provider_command.cc).
    failed(o,
           Status(Code::kUnavailable, "ProviderNotConnected",
                  "provider " + context_.provider_name +
                      " is not connected to its backend (see the Provider's conditions)"),
           false);
    return runtime::Result::requeueAfter(options_.not_connected_retry);
  }
  std::string uid = json::stringOr(&o, "metadata.uid");
  if (auto held = crashHold(o, uid, false)) return *held;
  if (auto wait = waitForCreateSlot(o, request.key())) return *wait;
  // The rendered userData, from the Secret the object names (docs/adr/0026): only for the call.
  auto user_data = resolveUserData(context_.client, o);
  if (!user_data.ok()) {
    releaseCreateSlot(request.key());
    return failed(o, user_data.status(), false);
  }
  const std::string provider_id_before = json::stringOr(&o, "spec.providerID");
  if (json::stringOr(&o, "status.operationToken").empty()) {
    if (auto wait = inSync(request.key(),
                           inputsFingerprint(o, provider_id_before, *user_data, connection))) {
      releaseCreateSlot(request.key());  // the settled call released it: nothing runs
      common::logger("provider")
          ->debug("{} {}: settled, inputs unchanged: no plugin call (next in {} ms)", kind_,
                  request.key(),
                  std::chrono::duration_cast<std::chrono::milliseconds>(wait->requeueAfterDelay())
                      .count());
      return *wait;
    }
  }
  const uint64_t wakes = beginCall(request.key());
  const auto call_began = std::chrono::steady_clock::now();
  auto machine_lock = context_.lockMachine(uid);  // a snapshot call on it waits
  auto result = instance->reconcile(kind_, callRequest(o, *user_data),
                                    context_.callOptions(uid, describe(o), generationOf(o)));
  if (context_.quarantine != nullptr) context_.quarantine->survived(uid);
  bool in_progress = result.code() == BANLIEUE_IN_PROGRESS;
  if (!in_progress) releaseCreateSlot(request.key());  // done, or failed: the slot is free
  if (!result.ok() && !in_progress) return failed(o, statusOf(result), false);
  if (auto violation = protocolViolation(result.outcome.body, in_progress); !violation.isOk()) {
    releaseCreateSlot(request.key());
    failed(o, violation, false);
    return runtime::Result::requeueAfter(kProtocolErrorRetry);
  }

  rapidjson::Document reply;
  reply.Parse(result.outcome.body.c_str());
  auto status = currentStatus(o);
  auto& a = status.GetAllocator();
  std::string provider_id;
  if (const auto* fields = json::member(&reply, "status");
      fields != nullptr && fields->IsObject()) {
    for (const auto& m : fields->GetObject()) {
      std::string name = m.name.GetString();
      if (name == "providerID") {
        provider_id = m.value.IsString() ? m.value.GetString() : "";
        continue;
      }
      // The runtime writes these: conditions merged with its Ready (below); the schema refused
      // a reply that sent operationToken or observedGeneration.
      if (name == "conditions" || name == "operationToken" || name == "observedGeneration") {
        continue;
      }
      if (m.value.IsString() && m.value.GetStringLength() == 0) {
        status.RemoveMember(name.c_str());  // "" clears the field ("" itself reads back as null)
      } else {
        setMember(status, name.c_str(), rapidjson::Value(m.value, a));
      }
    }
  }
  // providerID belongs in spec (the CAPI contract); written once. A merge patch, not an apply:
  // the 1.20 apiserver keeps one applied field set per manager for the object and its status
  // together, so an apply of spec alone by this manager would disown its status fields (a
  // later status apply could then no longer remove operationToken).
  // A spec write moves metadata.generation: the status below then reports the new one, or the
  // next pass would write the status a second time only to catch observedGeneration up.
  int64_t generation = json::integer(&o, "metadata.generation").value_or(0);
  if (!provider_id.empty() && provider_id != json::stringOr(&o, "spec.providerID")) {
    rapidjson::Document body(rapidjson::kObjectType);
    auto& ba = body.GetAllocator();
    rapidjson::Value spec(rapidjson::kObjectType);
    spec.AddMember("providerID", json::stringValue(provider_id, ba), ba);
    body.AddMember("spec", spec, ba);
    auto patched = context_.client.patch(type_, request.ns, request.name, kube::PatchType::kMerge,
                                         json::serialize(body));
    if (!patched.ok()) return runtime::Result::retry(patched.status());
    generation = json::integer(&*patched, "metadata.generation").value_or(generation);
    expectations_.expect(request.key(), &machines_, request.key(),
                         json::stringOr(&*patched, "metadata.resourceVersion"));
  }

  if (std::string token = in_progress ? json::stringOr(&reply, "operation.token") : "";
      token.empty()) {
    status.RemoveMember("operationToken");
  } else {
    setMember(status, "operationToken", json::stringValue(token, a));
  }
  bool provisioned = json::boolean(&status, "initialization.provisioned");
  if (provisioned) releaseCreateSlot(request.key());  // a later operation is no create
  auto [conditions, keep] = pluginConditions(reply, generation);
  conditions.insert(conditions.begin(),
                    machineReady(in_progress, json::stringOr(&reply, "operation.description"),
                                 provisioned, conditions, generation));
  if (runtime::condition(o, "Paused") != nullptr) {
    conditions.push_back({"Paused", "False", "NotPaused", "reconciling", generation});
  }
  setMember(status, "conditions",
            mergeConditions(json::find(&o, "status.conditions"), conditions, a, keep));
  setMember(status, "observedGeneration", rapidjson::Value(generation));

  runtime::Result next = in_progress
                             ? runtime::Result::requeueAfter(plugin::clampRequeueHint(
                                   result.outcome.requeue_after_ms, plugin::kDefaultPollInterval))
                         : result.outcome.requeue_after_ms >= 0
                             ? runtime::Result::requeueAfter(plugin::clampRequeueHint(
                                   result.outcome.requeue_after_ms, options_.resync))
                             : runtime::Result::requeueAfter(options_.resync);
  const bool at_resync = next.requeueAfterDelay() >= options_.resync;
  // At rest by the plugin's word, and the status it reported written: until the inputs change
  // or `next` is due, a pass makes no call.
  const bool settled = !in_progress && json::boolean(&reply, "settled");
  bool applied = false;
  auto written = writeStatus(o, status, next, &applied);
  if (settled && applied) {
    recordInSync(request.key(),
                 inputsFingerprint(o, provider_id.empty() ? provider_id_before : provider_id,
                                   *user_data, connection),
                 next, call_began, at_resync, wakes);
  }
  return written;
}

uint64_t MachineReconciler::inputsFingerprint(const rapidjson::Value& object,
                                              const std::string& provider_id,
                                              const std::optional<UserData>& user_data,
                                              int connection) const {
  rapidjson::Document spec(rapidjson::kObjectType);
  auto& a = spec.GetAllocator();
  if (const auto* s = json::member(&object, "spec"); s != nullptr && s->IsObject()) {
    spec.CopyFrom(*s, a);
  }
  spec.RemoveMember("providerID");
  spec.AddMember("providerID", json::stringValue(provider_id, a), a);
  std::string inputs = json::serialize(spec);
  for (const char* path : {"metadata.uid", "metadata.labels", "metadata.annotations"}) {
    if (const auto* v = json::find(&object, path)) inputs += "\n" + json::serialize(*v);
  }
  if (auto provider = providers_.get(context_.provider_namespace + "/" + context_.provider_name)) {
    inputs +=
        "\n" + std::to_string(json::integer(provider.get(), "metadata.generation").value_or(0));
  }
  inputs += "\n" + std::to_string(connection);
  if (user_data) inputs += "\n" + user_data->format + "\n" + user_data->text;
  return common::fnv1a64(inputs);
}

std::optional<runtime::Result> MachineReconciler::inSync(const std::string& key,
                                                         uint64_t fingerprint) {
  std::lock_guard lock(in_sync_mutex_);
  auto it = in_sync_.find(key);
  if (it == in_sync_.end() || !it->second.valid || it->second.fingerprint != fingerprint) {
    return std::nullopt;
  }
  auto now = std::chrono::steady_clock::now();
  if (now < it->second.due) {
    return runtime::Result::requeueAfter(
        std::chrono::ceil<std::chrono::milliseconds>(it->second.due - now));
  }
  // The resync is due, but the change feed has followed the backend since the call that saw
  // the machine settled: it would have woken the machine had it changed (issue #23: no
  // per-machine backend call at rest).
  if (it->second.at_resync && feed_covers_ && feed_covers_(it->second.seen)) {
    it->second.due = now + options_.resync;
    common::logger("provider")
        ->debug("{} {}: resync due, covered by the change feed: no plugin call", kind_, key);
    return runtime::Result::requeueAfter(options_.resync);
  }
  return std::nullopt;
}

uint64_t MachineReconciler::beginCall(const std::string& key) {
  std::lock_guard lock(in_sync_mutex_);
  auto it = in_sync_.find(key);
  if (it == in_sync_.end()) return 0;
  it->second.valid = false;
  return it->second.wakes;
}

void MachineReconciler::recordInSync(const std::string& key, uint64_t fingerprint,
                                     const runtime::Result& next,
                                     std::chrono::steady_clock::time_point seen, bool at_resync,
                                     uint64_t wakes) {
  std::lock_guard lock(in_sync_mutex_);
  InSync& entry = in_sync_[key];
  if (entry.wakes != wakes) return;  // woken during the call: what it saw may be old
  entry.valid = true;
  entry.fingerprint = fingerprint;
  entry.due = std::chrono::steady_clock::now() + next.requeueAfterDelay();
  entry.seen = seen;
  entry.at_resync = at_resync;
}

void MachineReconciler::forgetInSync(const std::string& key) {
  std::lock_guard lock(in_sync_mutex_);
  InSync& entry = in_sync_[key];
  entry.valid = false;
  ++entry.wakes;
}

void MachineReconciler::eraseInSync(const std::string& key) {
  std::lock_guard lock(in_sync_mutex_);
  in_sync_.erase(key);
}

runtime::Result MachineReconciler::finalize(const rapidjson::Value& object) {
  auto instance = context_.session.instance();
  if (!instance) {
    failed(object,
           Status(Code::kUnavailable, "ProviderNotConnected",
                  "cannot delete the backend machine: provider " + context_.provider_name +
                      " is not connected to its backend"),
           true);
    return runtime::Result::requeueAfter(options_.not_connected_retry);
  }
  std::string uid = json::stringOr(&object, "metadata.uid");
  if (auto held = crashHold(object, uid, true)) return *held;
  auto machine_lock = context_.lockMachine(uid);  // a snapshot call on it waits
  auto result =
      instance->finalize(kind_, callRequest(object),
                         context_.callOptions(uid, describe(object), generationOf(object)));
  if (context_.quarantine != nullptr) context_.quarantine->survived(uid);
  if (result.ok()) {
    releaseCreateSlot(runtime::objectKey(object));
    // The backend confirmed the machine is gone: only now may the object go.
    if (auto s = runtime::removeFinalizer(context_.client, type_, object, context_.finalizer());
        !s.isOk()) {
      return runtime::Result::retry(s);
    }
    context_.events.normal(object, "Deleted", "Finalize", "the backend machine was deleted");
    return runtime::Result::done();
  }
  if (result.code() != BANLIEUE_IN_PROGRESS) return failed(object, statusOf(result), true);
  rapidjson::Document reply;
  reply.Parse(result.outcome.body.c_str());
  auto status = currentStatus(object);
  auto& a = status.GetAllocator();
  if (std::string token = json::stringOr(&reply, "operation.token"); !token.empty()) {
    setMember(status, "operationToken", json::stringValue(token, a));
  }
  int64_t generation = json::integer(&object, "metadata.generation").value_or(0);
  setMember(status, "conditions",
            mergeConditions(
                json::find(&object, "status.conditions"),
                {{"Ready", "False", "Deleting",
                  json::stringOr(&reply, "operation.description", "deleting the backend machine"),
                  generation}},
                a));
  return writeStatus(object, status,
                     runtime::Result::requeueAfter(plugin::clampRequeueHint(
                         result.outcome.requeue_after_ms, plugin::kDefaultPollInterval)));
}

std::optional<runtime::Result> MachineReconciler::waitForCreateSlot(const rapidjson::Value& object,
                                                                    const std::string& key) {
  CreateSlots* slots = context_.create_slots;
  if (slots == nullptr) return std::nullopt;
  if (json::boolean(&object, "status.initialization.provisioned")) {
    slots->release(slotKey(key));
    return std::nullopt;  // resize, power, restart: not creates
  }
  int limit = api::kDefaultMaxConcurrentCreates;
  if (auto provider = providers_.get(context_.provider_namespace + "/" + context_.provider_name)) {
    if (auto v = json::integer(provider.get(), "spec.maxConcurrentCreates"); v && *v > 0) {
      limit = static_cast<int>(*v);
    }
  }
  slots->setLimit(limit);
  if (!json::stringOr(&object, "status.operationToken").empty()) {
    slots->hold(slotKey(key));  // running at the backend: it has its slot, whatever the count
    return std::nullopt;
  }
  // A new create may start only once every running one is counted: the cache must be whole.
  if (!machines_.hasSynced()) return runtime::Result::requeueAfter(std::chrono::milliseconds(200));
  std::call_once(running_creates_counted_, [&] {
    for (const auto& other : machines_.list()) {
      if (json::stringOr(other.get(), "spec.providerRef.name") == context_.provider_name &&
          !json::boolean(other.get(), "status.initialization.provisioned") &&
          !json::stringOr(other.get(), "status.operationToken").empty()) {
        slots->hold(slotKey(runtime::objectKey(*other)));
      }
    }
  });
  auto wake = wake_;
  if (slots->acquire(slotKey(key), [wake, key] {
        if (wake) wake(key);
      })) {
    return std::nullopt;
  }
  // Said once (the message does not change while it waits); the wake brings it back, the
  // requeue is a safety net.
  auto status = currentStatus(object);
  auto& a = status.GetAllocator();
  int64_t generation = json::integer(&object, "metadata.generation").value_or(0);
  setMember(status, "conditions",
            mergeConditions(
                json::find(&object, "status.conditions"),
                {{"Ready", "False", "WaitingForCreateSlot",
                  "provider " + context_.provider_name + " runs at most " + std::to_string(limit) +
                      " backend creates at once (spec.maxConcurrentCreates): this "
                      "one starts when one of them ends",
                  generation}},
                a));
  return writeStatus(object, status, runtime::Result::requeueAfter(std::chrono::seconds(60)));
}

void MachineReconciler::releaseCreateSlot(const std::string& key) {
  if (context_.create_slots != nullptr) context_.create_slots->release(slotKey(key));
}

std::string MachineReconciler::describe(const rapidjson::Value& object) const {
  return kind_ + " " + runtime::objectKey(object);
}

std::optional<runtime::Result> MachineReconciler::crashHold(const rapidjson::Value& object,
                                                            const std::string& uid, bool deleting) {
  if (context_.quarantine == nullptr) return std::nullopt;
  if (const auto* annotations = json::find(&object, "metadata.annotations");
      annotations != nullptr && annotations->IsObject() &&
      annotations->HasMember(kClearQuarantineAnnotation)) {
    // A user lifted the hold: consumed first, so a crash on the next call does not find it
    // still set after the restart and skip the count.
    auto removed =
        context_.client.patch(type_, json::stringOr(&object, "metadata.namespace"),
                              json::stringOr(&object, "metadata.name"), kube::PatchType::kMerge,
                              std::string(R"({"metadata":{"annotations":{")") +
                                  kClearQuarantineAnnotation + R"(":null}}})");
    if (!removed.ok()) return runtime::Result::retry(removed.status());
    context_.quarantine->clear(uid);
    context_.events.normal(object, "QuarantineCleared", deleting ? "Finalize" : "Reconcile",
                           std::string("the annotation ") + kClearQuarantineAnnotation +
                               " lifted the hold: the object goes to the plugin again");
  }
  auto held = context_.quarantine->hold(uid, generationOf(object));
  if (!held) return std::nullopt;
  // Ready=False/PluginCrashed (or PluginHung) and a Warning event (INTERNAL's policy), then
  // back after the hold; a quarantined object comes back only through its own change.
  failed(object, Status(Code::kInternal, held->reason, held->message), deleting);
  if (held->retry_after.count() == 0) return runtime::Result::done();
  return runtime::Result::requeueAfter(held->retry_after);
}

runtime::Result MachineReconciler::writeStatus(const rapidjson::Value& object,
                                               rapidjson::Document& status, runtime::Result next,
                                               bool* applied) {
  bool was_ready = false;
  if (const auto* conditions = json::find(&object, "status.conditions");
      conditions != nullptr && conditions->IsArray()) {
    for (const auto& c : conditions->GetArray()) {
      if (json::stringOr(&c, "type") == "Ready") was_ready = json::stringOr(&c, "status") == "True";
    }
  }
  std::string version;
  auto written = applyStatusIfChanged(context_.client, type_, object, status,
                                      context_.fieldManager(), /*whole_status=*/true, &version);
  if (!written.ok() && (written.status().code() == Code::kInvalidArgument ||
                        written.status().code() == Code::kInternal)) {
    // Refused (422, or 500 "failed to create typed patch object" from a 1.20 apiserver). When
    // the status as it was, with the reason, goes through, the plugin's fields were the cause:
    // said once on the object and tried again in a minute, instead of the same refused write on
    // every pass with nothing on the object.
    bool reported = false;
    failed(object,
           error(Code::kInternal, "ProviderProtocolError",
                 "the apiserver refused the status the " + context_.backend +
                     " plugin reported: " + written.status().message() + kProtocolErrorNextTry),
           false, &reported);
    if (reported) return runtime::Result::requeueAfter(kProtocolErrorRetry);
  }
  if (!written.ok()) return runtime::Result::retry(written.status());
  if (applied != nullptr) *applied = true;
  if (*written) {
    std::string key = runtime::objectKey(object);
    expectations_.expect(key, &machines_, key, version);
  }
  bool ready = false;
  for (const auto& c : status["conditions"].GetArray()) {
    if (json::stringOr(&c, "type") == "Ready") ready = json::stringOr(&c, "status") == "True";
  }
  if (*written && ready && !was_ready && !ownedByVirtualMachine(object)) {
    context_.events.normal(object, "Provisioned", "Reconcile", "the backend machine is ready");
  }
  return next;
}

runtime::Result MachineReconciler::paused(const rapidjson::Value& object) {
  auto status = currentStatus(object);
  auto& a = status.GetAllocator();
  int64_t generation = json::integer(&object, "metadata.generation").value_or(0);
  setMember(status, "conditions",
            mergeConditions(json::find(&object, "status.conditions"),
                            {{"Paused", "True", "Paused",
                              std::string("annotation ") + api::kPausedAnnotation +
                                  ": nothing is done on the backend until it is removed",
                              generation}},
                            a));
  auto written = applyStatusIfChanged(context_.client, type_, object, status,
                                      context_.fieldManager(), /*whole_status=*/true);
  if (!written.ok()) return runtime::Result::retry(written.status());
  return runtime::Result::done();
}

runtime::Result MachineReconciler::failed(const rapidjson::Value& object, const Status& failure,
                                          bool deleting, bool* reported) {
  forgetInSync(runtime::objectKey(object));  // the next pass calls the plugin again
  auto policy = plugin::policyFor(static_cast<banlieue_status>(failure.code()));
  auto status = currentStatus(object);
  auto& a = status.GetAllocator();
  // A transient failure polls the same backend task again; a terminal one ended it.
  if (policy.disposition == plugin::Disposition::kTerminal) status.RemoveMember("operationToken");
  int64_t generation = json::integer(&object, "metadata.generation").value_or(0);
  std::string message = deleting ? "deleting: " + failure.message() : failure.message();
  setMember(status, "conditions",
            mergeConditions(json::find(&object, "status.conditions"),
                            {{"Ready", "False", failure.reason(), message, generation}}, a));
  setMember(status, "observedGeneration", rapidjson::Value(generation));
  auto written = applyStatusIfChanged(context_.client, type_, object, status,
                                      context_.fieldManager(), /*whole_status=*/true);
  if (reported != nullptr) *reported = written.ok();
  if (written.ok() && *written && policy.warning_event) {
    context_.events.warning(object, failure.reason(), deleting ? "Finalize" : "Reconcile", message);
  }
  common::logger("provider")
      ->warn("{} {}/{}: {}: {}", kind_, json::stringOr(&object, "metadata.namespace"),
             json::stringOr(&object, "metadata.name"), failure.reason(), failure.message());
  switch (policy.disposition) {
    case plugin::Disposition::kTerminal:
      return policy.slow_retry.count() > 0 ? runtime::Result::requeueAfter(policy.slow_retry)
                                           : runtime::Result::terminal(failure);
    default: return runtime::Result::retry(failure);
  }
}

}  // namespace banlieue::roles::provider
