#include "host/runtime/object_helpers.h"

#include "host/kube/api_error.h"

#include <banlieue/sdk/json.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <utility>

namespace banlieue::runtime {
namespace {

namespace json = sdk::json;

// Rewrites the finalizer list and writes it back guarded by the resourceVersion of the copy it
// was computed from. A merge patch with that precondition, not a JSON patch with a `test` op:
// `test` cannot say "the list is absent" (and `add` then replaces a list another writer just
// created), its failure is a 422 that reads like any invalid patch rather than a 409, and it
// does not notice a deletion that began after the copy was taken. The precondition also fails
// on unrelated writes since the copy; that costs a read and a second patch, as every call did
// before callers passed their cached copy.
Status editFinalizers(kube::KubeClient& client, const kube::ResourceType& type,
                      const std::string& ns, const std::string& name,
                      const rapidjson::Value* cached, const std::string& finalizer, bool add,
                      int attempts) {
  if (cached != nullptr && json::stringOr(cached, "metadata.resourceVersion").empty()) {
    cached = nullptr;  // nothing to guard the patch with
  }
  const rapidjson::Value* current = cached;
  rapidjson::Document fetched;
  Status last = Status::ok();
  for (int attempt = 0; attempt < attempts; ++attempt) {
    if (current == nullptr) {
      auto got = client.get(type, ns, name);
      if (!got.ok()) {
        if (!add && kube::isNotFound(got.status())) return Status::ok();
        return got.status();
      }
      fetched = std::move(got).value();
      current = &fetched;
    }
    if (hasFinalizer(*current, finalizer) == add) return Status::ok();
    if (add && json::find(current, "metadata.deletionTimestamp") != nullptr) {
      std::string message = type.plural + " ";
      if (!ns.empty()) message += ns + "/";
      message += name;
      message += " is being deleted: finalizer ";
      message += finalizer;
      message += " is not added";
      return error(Code::kFailedPrecondition, "ObjectDeleting", std::move(message));
    }
    rapidjson::Document patch(rapidjson::kObjectType);
    auto& a = patch.GetAllocator();
    rapidjson::Value list(rapidjson::kArrayType);
    if (const auto* existing = json::find(current, "metadata.finalizers");
        existing && existing->IsArray()) {
      for (const auto& f : existing->GetArray()) {
        if (f.IsString() && (add || finalizer != f.GetString()))
          list.PushBack(rapidjson::Value(f, a), a);
      }
    }
    if (add) list.PushBack(json::stringValue(finalizer, a), a);
    rapidjson::Value metadata(rapidjson::kObjectType);
    metadata.AddMember("resourceVersion",
                       json::stringValue(json::stringOr(current, "metadata.resourceVersion"), a),
                       a);
    metadata.AddMember("finalizers", list, a);
    patch.AddMember("metadata", metadata, a);
    auto patched = client.patch(type, ns, name, kube::PatchType::kMerge, json::serialize(patch));
    if (patched.ok()) return Status::ok();
    last = patched.status();
    if (!add && kube::isNotFound(last)) return Status::ok();
    if (!kube::isConflict(last)) return last;  // only a concurrent write is worth retrying
    current = nullptr;                         // someone wrote since this copy: read it again
  }
  return last;
}

}  // namespace

int64_t generationOf(const rapidjson::Value& object) {
  return sdk::json::integer(&object, "metadata.generation").value_or(0);
}

namespace {

// metadata.<map>[key] (labels, annotations): one member, never a dotted path.
const rapidjson::Value* metadataEntry(const rapidjson::Value& object, const char* map,
                                      const std::string& key) {
  const auto* entries = json::member(json::member(&object, "metadata"), map);
  return json::member(entries, key);
}

std::string stringOf(const rapidjson::Value* value) {
  if (value == nullptr || !value->IsString()) return {};
  return {value->GetString(), value->GetStringLength()};
}

}  // namespace

std::string annotation(const rapidjson::Value& object, const std::string& key) {
  return stringOf(metadataEntry(object, "annotations", key));
}

bool hasAnnotation(const rapidjson::Value& object, const std::string& key) {
  return metadataEntry(object, "annotations", key) != nullptr;
}

std::string label(const rapidjson::Value& object, const std::string& key) {
  return stringOf(metadataEntry(object, "labels", key));
}

const rapidjson::Value* condition(const rapidjson::Value& object, const std::string& type) {
  const auto* conditions = json::find(&object, "status.conditions");
  if (conditions == nullptr || !conditions->IsArray()) return nullptr;
  for (const auto& c : conditions->GetArray()) {
    if (json::stringOr(&c, "type") == type) return &c;
  }
  return nullptr;
}

const rapidjson::Value* trueCondition(const rapidjson::Value& object, const std::string& type) {
  const auto* c = condition(object, type);
  return c != nullptr && json::stringOr(c, "status") == "True" ? c : nullptr;
}

bool hasFinalizer(const rapidjson::Value& object, const std::string& finalizer) {
  const auto* list = json::find(&object, "metadata.finalizers");
  if (list == nullptr || !list->IsArray()) return false;
  for (const auto& f : list->GetArray()) {
    if (f.IsString() && finalizer == f.GetString()) return true;
  }
  return false;
}

Status addFinalizer(kube::KubeClient& client, const kube::ResourceType& type,
                    const rapidjson::Value& cached, const std::string& finalizer, int attempts) {
  return editFinalizers(client, type, json::stringOr(&cached, "metadata.namespace"),
                        json::stringOr(&cached, "metadata.name"), &cached, finalizer, true,
                        attempts);
}

Status removeFinalizer(kube::KubeClient& client, const kube::ResourceType& type,
                       const rapidjson::Value& cached, const std::string& finalizer, int attempts) {
  return editFinalizers(client, type, json::stringOr(&cached, "metadata.namespace"),
                        json::stringOr(&cached, "metadata.name"), &cached, finalizer, false,
                        attempts);
}

Status addFinalizer(kube::KubeClient& client, const kube::ResourceType& type, const std::string& ns,
                    const std::string& name, const std::string& finalizer, int attempts) {
  return editFinalizers(client, type, ns, name, nullptr, finalizer, true, attempts);
}

Status removeFinalizer(kube::KubeClient& client, const kube::ResourceType& type,
                       const std::string& ns, const std::string& name, const std::string& finalizer,
                       int attempts) {
  return editFinalizers(client, type, ns, name, nullptr, finalizer, false, attempts);
}

namespace {

bool isAsciiLetter(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
bool isAsciiWordChar(char c) {
  return isAsciiLetter(c) || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

bool isConditionReason(std::string_view reason) {
  if (reason.empty() || reason.size() > kMaxConditionReason) return false;
  if (!isAsciiLetter(reason.front()) || !isAsciiWordChar(reason.back())) return false;
  return std::all_of(reason.begin(), reason.end(),
                     [](char c) { return isAsciiWordChar(c) || c == ',' || c == ':'; });
}

std::string conditionReason(const std::string& text) {
  if (isConditionReason(text)) return text;
  std::string out;
  bool word_start = true;
  for (char c : text) {
    bool usable = isAsciiLetter(c) || (!out.empty() && isAsciiWordChar(c));
    if (!usable) {
      word_start = true;
      continue;
    }
    if (word_start && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    out += c;
    word_start = false;
    if (out.size() == kMaxConditionReason) break;
  }
  return out.empty() ? "Unspecified" : out;
}

std::string conditionMessage(const std::string& message, const std::string& reason) {
  if (message.empty()) return reason;
  if (message.size() <= kMaxConditionMessage) return message;
  // Bytes bound characters from above; cut on a UTF-8 boundary.
  size_t end = kMaxConditionMessage;
  while (end > 0 && (static_cast<unsigned char>(message[end]) & 0xC0) == 0x80) --end;
  return message.substr(0, end);
}

bool setCondition(rapidjson::Value& conditions, rapidjson::Document::AllocatorType& a,
                  const Condition& wanted, const std::string& now) {
  Condition c = wanted;
  c.reason = conditionReason(wanted.reason);
  // An empty message takes the reason as it was given: "plugin said no" reads better than
  // "PluginSaidNo".
  c.message = conditionMessage(wanted.message, wanted.reason.empty() ? c.reason : wanted.reason);
  if (!conditions.IsArray()) conditions.SetArray();
  rapidjson::Value* existing = nullptr;
  for (auto& entry : conditions.GetArray()) {
    if (json::stringOr(&entry, "type") == c.type) existing = &entry;
  }
  auto set = [&](rapidjson::Value& entry, const char* key, rapidjson::Value value) {
    if (entry.HasMember(key)) {
      entry[key] = value;
    } else {
      entry.AddMember(rapidjson::StringRef(key), value, a);
    }
  };
  if (existing == nullptr) {
    rapidjson::Value entry(rapidjson::kObjectType);
    entry.AddMember("type", json::stringValue(c.type, a), a);
    conditions.PushBack(entry, a);
    existing = &conditions[conditions.Size() - 1];
  } else if (json::stringOr(existing, "status") == c.status &&
             json::stringOr(existing, "reason") == c.reason &&
             json::stringOr(existing, "message") == c.message &&
             json::integer(existing, "observedGeneration").value_or(0) == c.observed_generation) {
    return false;
  }
  bool transition = json::stringOr(existing, "status") != c.status;
  set(*existing, "status", json::stringValue(c.status, a));
  set(*existing, "reason", json::stringValue(c.reason, a));
  set(*existing, "message", json::stringValue(c.message, a));
  set(*existing, "observedGeneration", rapidjson::Value(c.observed_generation));
  if (transition || !existing->HasMember("lastTransitionTime")) {
    set(*existing, "lastTransitionTime", json::stringValue(now, a));
  }
  return true;
}

std::string rfc3339Now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string rfc3339MicroNow() {
  auto now = std::chrono::system_clock::now();
  auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];
  size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%06lldZ", static_cast<long long>(micros));
  return buf;
}

}  // namespace banlieue::runtime

namespace banlieue::runtime {

Status setOwnerReference(rapidjson::Value& object, rapidjson::Document::AllocatorType& allocator,
                         const rapidjson::Value& owner, bool controller) {
  std::string uid = json::stringOr(json::find(&owner, "metadata.uid"), "");
  std::string owner_name = json::stringOr(json::find(&owner, "metadata.name"), "");
  std::string owner_ns = json::stringOr(json::find(&owner, "metadata.namespace"), "");
  std::string object_ns = json::stringOr(json::find(&object, "metadata.namespace"), "");
  std::string kind = json::stringOr(&owner, "kind");
  std::string api_version = json::stringOr(&owner, "apiVersion");
  if (uid.empty() || owner_name.empty() || kind.empty() || api_version.empty()) {
    return error(Code::kInvalidArgument, "InvalidOwner",
                 "an owner needs apiVersion, kind, metadata.name and metadata.uid (read it from "
                 "the API server before owning objects with it)");
  }
  if (!owner_ns.empty() && owner_ns != object_ns) {
    return error(Code::kInvalidArgument, "CrossNamespaceOwner",
                 kind + " " + owner_ns + "/" + owner_name + " cannot own an object in namespace '" +
                     object_ns + "': owner references never cross namespaces");
  }
  if (!object.IsObject()) object.SetObject();
  if (!object.HasMember("metadata")) {
    object.AddMember("metadata", rapidjson::Value(rapidjson::kObjectType), allocator);
  }
  auto& metadata = object["metadata"];
  if (!metadata.HasMember("ownerReferences")) {
    metadata.AddMember("ownerReferences", rapidjson::Value(rapidjson::kArrayType), allocator);
  }
  auto& refs = metadata["ownerReferences"];
  if (controller) {
    for (const auto& ref : refs.GetArray()) {
      if (json::boolean(&ref, "controller") && json::stringOr(&ref, "uid") != uid) {
        return error(Code::kFailedPrecondition, "AlreadyControlled",
                     "object is already controlled by " + json::stringOr(&ref, "kind") + " " +
                         json::stringOr(&ref, "name"));
      }
    }
  }
  rapidjson::Value ref(rapidjson::kObjectType);
  ref.AddMember("apiVersion", rapidjson::Value(api_version.c_str(), allocator), allocator);
  ref.AddMember("kind", rapidjson::Value(kind.c_str(), allocator), allocator);
  ref.AddMember("name", rapidjson::Value(owner_name.c_str(), allocator), allocator);
  ref.AddMember("uid", rapidjson::Value(uid.c_str(), allocator), allocator);
  if (controller) {
    ref.AddMember("controller", true, allocator);
    ref.AddMember("blockOwnerDeletion", true, allocator);
  }
  for (auto& existing : refs.GetArray()) {
    if (json::stringOr(&existing, "uid") == uid) {
      existing = ref;
      return Status::ok();
    }
  }
  refs.PushBack(ref, allocator);
  return Status::ok();
}

const rapidjson::Value* controllerReference(const rapidjson::Value& object) {
  const auto* refs = json::find(&object, "metadata.ownerReferences");
  if (refs == nullptr || !refs->IsArray()) return nullptr;
  for (const auto& ref : refs->GetArray()) {
    if (json::boolean(&ref, "controller")) return &ref;
  }
  return nullptr;
}

std::optional<std::time_t> parseRfc3339(const std::string& text) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  char zone = 0;
  // Fractions and offsets other than Z do not occur in metav1.Time as the API server writes it.
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &year, &month, &day, &hour, &minute,
                  &second, &zone) != 7 ||
      zone != 'Z' || month < 1 || month > 12 || day < 1 || day > 31) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return timegm(&tm);
}

}  // namespace banlieue::runtime
