// Typed views of the JSON payloads of banlieue_provider_v1 (schemas in sdk/schemas/; what the
// host sends and reads in each: docs/provider-contract.md).
// A view owns the parsed document and exposes the fields plugins need by name; anything
// else stays reachable through the raw JSON values.
#pragma once

#include <banlieue/sdk/json.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace banlieue::sdk {

// Secret values, zeroed when dropped or wiped. Never log them. (The parsed config document
// they came from is the plugin's to drop as soon as the instance is built; InstanceConfig
// does so when it is destroyed.)
class SecretData {
 public:
  SecretData() = default;
  SecretData(const SecretData&) = delete;
  SecretData& operator=(const SecretData&) = delete;
  SecretData(SecretData&& other) noexcept : values_(std::move(other.values_)) {
    other.values_.clear();
  }
  SecretData& operator=(SecretData&& other) noexcept {
    if (this != &other) {
      wipe();
      values_ = std::move(other.values_);
      other.values_.clear();
    }
    return *this;
  }
  ~SecretData() { wipe(); }

  void set(std::string key, std::string value) { values_[std::move(key)] = std::move(value); }
  std::optional<std::string_view> get(std::string_view key) const {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) return std::nullopt;
    return std::string_view(it->second);
  }
  bool empty() const { return values_.empty(); }
  void wipe() {
    for (auto& [key, value] : values_) {
      volatile char* p = value.data();
      for (size_t i = 0; i < value.size(); ++i) p[i] = 0;
    }
    values_.clear();
  }

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

// instance_create's config: {"provider": <Provider object>, "credentials": {key: value}}. The
// host resolves the Provider's CA bundle source into spec.connection.caBundle.data.
struct InstanceConfig {
  rapidjson::Document document;
  const rapidjson::Value* provider = nullptr;
  std::string provider_name;       // metadata.name
  std::string provider_namespace;  // metadata.namespace
  std::string endpoint;            // spec.connection.endpoint
  bool insecure_skip_tls_verify = false;
  // spec.connection.allowTestDriver: the Provider's owner accepts a backend driver that only
  // simulates VMs (libvirt's test://). A plugin refuses such a driver without it.
  bool allow_test_driver = false;
  std::string ca_bundle;   // spec.connection.caBundle.data (PEM), resolved by the host
  SecretData credentials;  // decoded data of spec.connection.credentialsRef

  static InstanceConfig parse(std::string_view text) {
    InstanceConfig config;
    config.document = json::parse(text, "instance config");
    config.provider = json::member(&config.document, "provider");
    if (config.provider == nullptr || !config.provider->IsObject()) {
      throw Error(Code::kInvalidArgument, "MissingField",
                  "instance config: field 'provider' must be the Provider object");
    }
    config.provider_name = json::stringOr(config.provider, "metadata.name");
    config.provider_namespace = json::stringOr(config.provider, "metadata.namespace");
    config.endpoint = json::stringOr(config.provider, "spec.connection.endpoint");
    config.insecure_skip_tls_verify =
        json::boolean(config.provider, "spec.connection.insecureSkipTLSVerify");
    config.allow_test_driver = json::boolean(config.provider, "spec.connection.allowTestDriver");
    config.ca_bundle = json::stringOr(config.provider, "spec.connection.caBundle.data");
    if (const auto* creds = json::member(&config.document, "credentials");
        creds != nullptr && creds->IsObject()) {
      for (const auto& m : creds->GetObject()) {
        if (m.value.IsString()) {
          config.credentials.set(m.name.GetString(),
                                 std::string(m.value.GetString(), m.value.GetStringLength()));
        }
      }
    }
    return config;
  }

 private:
  static void wipeStrings(rapidjson::Value& v) {
    if (v.IsString()) {
      auto* p = const_cast<volatile char*>(v.GetString());
      for (rapidjson::SizeType i = 0; i < v.GetStringLength(); ++i) p[i] = 0;
    } else if (v.IsObject()) {
      for (auto& m : v.GetObject()) wipeStrings(m.value);
    } else if (v.IsArray()) {
      for (auto& e : v.GetArray()) wipeStrings(e);
    }
  }
};

// reconcile/finalize request: {"kind", "object", "references"?, "operation"?: {"token"}}.
struct ReconcileRequest {
  rapidjson::Document document;
  std::string kind;
  const rapidjson::Value* object = nullptr;      // the whole infra object
  const rapidjson::Value* spec = nullptr;        // object.spec (may be null)
  const rapidjson::Value* status = nullptr;      // object.status (may be null)
  const rapidjson::Value* references = nullptr;  // resolved VMClass/VMImage/userData, if any
  std::string name;
  std::string namespace_;
  std::string uid;
  int64_t generation = 0;
  std::optional<std::string> operation_token;  // from the previous IN_PROGRESS reply

  static ReconcileRequest parse(std::string_view kind, std::string_view text) {
    ReconcileRequest request;
    request.kind = std::string(kind);
    request.document = json::parse(text, "reconcile request");
    request.object = json::member(&request.document, "object");
    if (request.object == nullptr || !request.object->IsObject()) {
      throw Error(Code::kInvalidArgument, "MissingField",
                  "reconcile request: field 'object' must be the " + request.kind + " object");
    }
    request.spec = json::member(request.object, "spec");
    request.status = json::member(request.object, "status");
    request.references = json::member(&request.document, "references");
    request.name = json::stringOr(request.object, "metadata.name");
    request.namespace_ = json::stringOr(request.object, "metadata.namespace");
    request.uid = json::stringOr(request.object, "metadata.uid");
    request.generation = json::integer(request.object, "metadata.generation").value_or(0);
    if (auto token = json::string(&request.document, "operation.token"); token && !token->empty()) {
      request.operation_token = std::string(*token);
    }
    return request;
  }
};

// validate request: {"operation": CREATE|UPDATE|DELETE, "object", "oldObject"?}. kind is the
// object's bare kind: a served one, or "Provider".
struct ValidateRequest {
  rapidjson::Document document;
  std::string kind;
  std::string operation;                         // CREATE, UPDATE or DELETE
  const rapidjson::Value* object = nullptr;      // never null after parse()
  const rapidjson::Value* old_object = nullptr;  // set on UPDATE

  static ValidateRequest parse(std::string_view kind, std::string_view text) {
    ValidateRequest request;
    request.kind = std::string(kind);
    request.document = json::parse(text, "validate request");
    request.operation = json::stringOr(&request.document, "operation", "CREATE");
    request.object = json::member(&request.document, "object");
    if (request.object == nullptr || !request.object->IsObject()) {
      throw Error(Code::kInvalidArgument, "MissingField",
                  "validate request: field 'object' must be the " + request.kind + " object");
    }
    request.old_object = json::member(&request.document, "oldObject");
    return request;
  }
};

// introspect request: {"provider": <Provider object>, "operation"?: {"token"}}. The host
// always sends provider; an empty request (a test calling the slot directly) parses as {}.
struct IntrospectRequest {
  rapidjson::Document document;
  const rapidjson::Value* provider = nullptr;  // may be null when the host sends none
  std::optional<std::string> operation_token;

  static IntrospectRequest parse(std::string_view text) {
    IntrospectRequest request;
    request.document =
        json::parse(text.empty() ? std::string_view("{}") : text, "introspect request");
    request.provider = json::member(&request.document, "provider");
    if (auto token = json::string(&request.document, "operation.token"); token && !token->empty()) {
      request.operation_token = std::string(*token);
    }
    return request;
  }
};

// import_image request: {"image": <VMImage>, "artifact": {...}, "failureDomain": "...",
// "target"?: one of the failure domain's attributes.importTargets, "operation"?: {"token"}}.
struct ImportImageRequest {
  rapidjson::Document document;
  const rapidjson::Value* image = nullptr;
  std::string image_name;
  std::string artifact_path;    // local file, already checksum-verified by the host
  std::string artifact_format;  // raw | qcow2 | iso | ova
  std::string artifact_sha256;
  int64_t artifact_size_bytes = 0;
  std::string failure_domain;
  // The one target to import into (libvirt: a storage pool); empty: every target the plugin
  // knows (a host from before per-target imports sends none).
  std::string target;
  std::optional<std::string> operation_token;

  static ImportImageRequest parse(std::string_view text) {
    ImportImageRequest request;
    request.document = json::parse(text, "import_image request");
    request.image = json::member(&request.document, "image");
    request.image_name = json::stringOr(request.image, "metadata.name");
    request.artifact_path = std::string(
        json::requireString(&request.document, "artifact.path", "import_image request"));
    request.artifact_format = std::string(
        json::requireString(&request.document, "artifact.format", "import_image request"));
    request.artifact_sha256 = json::stringOr(&request.document, "artifact.sha256");
    request.artifact_size_bytes =
        json::integer(&request.document, "artifact.sizeBytes").value_or(0);
    request.failure_domain = json::stringOr(&request.document, "failureDomain");
    request.target = json::stringOr(&request.document, "target");
    if (auto token = json::string(&request.document, "operation.token"); token && !token->empty()) {
      request.operation_token = std::string(*token);
    }
    return request;
  }
};

// delete_image request (SINCE 1.1): {"image": <VMImage>, "failureDomain": "...", "target"?: the
// import target of that zone row, "resolvedRef"?: what import_image reported for that failure
// domain, "operation"?: {"token"}}.
struct DeleteImageRequest {
  rapidjson::Document document;
  const rapidjson::Value* image = nullptr;
  std::string image_name;
  std::string failure_domain;
  std::string resolved_ref;  // empty when the import never reported one
  std::string target;        // the one target to delete from; empty: every target
  std::optional<std::string> operation_token;

  static DeleteImageRequest parse(std::string_view text) {
    DeleteImageRequest request;
    request.document = json::parse(text, "delete_image request");
    request.image = json::member(&request.document, "image");
    request.image_name = json::stringOr(request.image, "metadata.name");
    request.failure_domain = std::string(
        json::requireString(&request.document, "failureDomain", "delete_image request"));
    request.resolved_ref = json::stringOr(&request.document, "resolvedRef");
    request.target = json::stringOr(&request.document, "target");
    if (auto token = json::string(&request.document, "operation.token"); token && !token->empty()) {
      request.operation_token = std::string(*token);
    }
    return request;
  }
};

// snapshot request (SINCE 1.2): {"action": "create"|"list"|"revert"|"delete", "kind",
// "machine": <infrastructure object>, "snapshot"?: {"name", "uid", "memory", "description"},
// "snapshotRef"?: what create reported, "operation"?: {"token"}}.
struct SnapshotRequest {
  enum class Action { kCreate, kList, kRevert, kDelete };
  rapidjson::Document document;
  Action action = Action::kCreate;
  std::string kind;
  const rapidjson::Value* machine = nullptr;
  std::string provider_id;   // machine spec.providerID: the backend VM; empty before it exists
  std::string name;          // snapshot.name: the backend-side name (create's idempotency key)
  std::string uid;           // snapshot.uid
  bool memory = false;       // snapshot.memory: include the running machine's memory
  std::string description;   // snapshot.description
  std::string snapshot_ref;  // what create reported (revert, delete); empty otherwise
  std::optional<std::string> operation_token;

  static SnapshotRequest parse(std::string_view text) {
    static constexpr const char* kWhat = "snapshot request";
    SnapshotRequest request;
    request.document = json::parse(text, kWhat);
    const std::string action(json::requireString(&request.document, "action", kWhat));
    if (action == "create") {
      request.action = Action::kCreate;
    } else if (action == "list") {
      request.action = Action::kList;
    } else if (action == "revert") {
      request.action = Action::kRevert;
    } else if (action == "delete") {
      request.action = Action::kDelete;
    } else {
      throw Error(Code::kInvalidArgument, "InvalidField",
                  std::string(kWhat) + ": action must be create, list, revert or delete, not '" +
                      action + "'");
    }
    request.kind = std::string(json::requireString(&request.document, "kind", kWhat));
    request.machine = json::member(&request.document, "machine");
    request.provider_id = json::stringOr(request.machine, "spec.providerID");
    request.name = json::stringOr(&request.document, "snapshot.name");
    request.uid = json::stringOr(&request.document, "snapshot.uid");
    request.memory = json::boolean(&request.document, "snapshot.memory", false);
    request.description = json::stringOr(&request.document, "snapshot.description");
    request.snapshot_ref = json::stringOr(&request.document, "snapshotRef");
    if (request.action != Action::kList && request.name.empty()) {
      throw Error(Code::kInvalidArgument, "MissingField",
                  std::string(kWhat) + ": field 'snapshot.name' is required for " + action);
    }
    if (auto token = json::string(&request.document, "operation.token"); token && !token->empty()) {
      request.operation_token = std::string(*token);
    }
    return request;
  }
};

// console_open request (SINCE 1.3): {"kind", "machine": <infrastructure object>, "console":
// "serial"}.
struct ConsoleRequest {
  rapidjson::Document document;
  std::string kind;
  const rapidjson::Value* machine = nullptr;
  std::string provider_id;  // machine spec.providerID: the backend VM; empty before it exists
  std::string console;      // "serial" (a stream) or "webmks" (a ticket URL, no stream)

  static ConsoleRequest parse(std::string_view text) {
    static constexpr const char* kWhat = "console request";
    ConsoleRequest request;
    request.document = json::parse(text, kWhat);
    request.kind = std::string(json::requireString(&request.document, "kind", kWhat));
    request.machine = json::member(&request.document, "machine");
    request.provider_id = json::stringOr(request.machine, "spec.providerID");
    request.console = json::stringOr(&request.document, "console");
    if (request.console.empty()) request.console = "serial";
    return request;
  }
};

// watch_changes request (SINCE 1.4): {"cursor": the last reply's cursor, "" on the first call}.
struct WatchRequest {
  std::string cursor;

  static WatchRequest parse(std::string_view text) {
    static constexpr const char* kWhat = "watch_changes request";
    rapidjson::Document document = json::parse(text, kWhat);
    WatchRequest request;
    request.cursor = json::stringOr(&document, "cursor");
    return request;
  }
};

// What describe reports. toJson() produces sdk/schemas/describe.response.json.
struct Capabilities {
  struct Kind {
    std::string group;                    // e.g. infrastructure.banlieue.io
    std::string version;                  // e.g. v1beta2
    std::string kind;                     // e.g. LibvirtMachine
    std::vector<std::string> operations;  // reconcile, finalize, validate
  };
  std::string backend;
  std::vector<Kind> kinds;
  std::vector<std::string> features;
  bool introspect = false;                 // set when the Instance overrides introspect()
  bool import_image = false;               // set when the Instance overrides importImage()
  bool delete_image = false;               // set when the Instance overrides deleteImage()
  bool snapshot = false;                   // set when the Instance overrides snapshot()
  bool console = false;                    // set when the Instance overrides openConsole()
  bool watch_changes = false;              // set when the Instance overrides watchChanges()
  std::vector<std::string> image_formats;  // formats import_image accepts

  std::string toJson(std::string_view name, std::string_view version) const {
    rapidjson::Document doc(rapidjson::kObjectType);
    auto& a = doc.GetAllocator();
    auto strings = [&a](const std::vector<std::string>& items) {
      rapidjson::Value list(rapidjson::kArrayType);
      for (const auto& s : items) list.PushBack(json::stringValue(s, a), a);
      return list;
    };
    doc.AddMember("name", json::stringValue(name, a), a);
    doc.AddMember("providerVersion", json::stringValue(version, a), a);
    doc.AddMember("backend", json::stringValue(backend.empty() ? name : backend, a), a);
    rapidjson::Value kind_list(rapidjson::kArrayType);
    for (const auto& k : kinds) {
      rapidjson::Value entry(rapidjson::kObjectType);
      entry.AddMember("group", json::stringValue(k.group, a), a);
      entry.AddMember("version", json::stringValue(k.version, a), a);
      entry.AddMember("kind", json::stringValue(k.kind, a), a);
      entry.AddMember("operations", strings(k.operations), a);
      kind_list.PushBack(entry, a);
    }
    doc.AddMember("kinds", kind_list, a);
    doc.AddMember("features", strings(features), a);
    rapidjson::Value ops(rapidjson::kObjectType);
    ops.AddMember("introspect", introspect, a);
    ops.AddMember("importImage", import_image, a);
    ops.AddMember("deleteImage", delete_image, a);
    ops.AddMember("snapshot", snapshot, a);
    ops.AddMember("console", console, a);
    ops.AddMember("watchChanges", watch_changes, a);
    doc.AddMember("operations", ops, a);
    doc.AddMember("imageFormats", strings(image_formats), a);
    return json::serialize(doc);
  }
};

}  // namespace banlieue::sdk
