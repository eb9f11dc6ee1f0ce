// Contract helpers every controller needs, with the guarantees spelled out:
//  - finalizers are added/removed with an optimistic merge patch that carries the
//    resourceVersion of the copy it was computed from, so another writer's finalizers are never
//    clobbered (a conflict rereads and retries, at most `attempts` patches in all); given the
//    caller's cached copy, an up-to-date cache costs one request, not a GET and a PATCH;
//  - an object being deleted never gets a new finalizer (the API server refuses it too);
//  - conditions change lastTransitionTime only when their status changes, and carry the
//    observedGeneration they describe; setting an identical condition reports "unchanged" so
//    callers can skip the write entirely.
#pragma once

#include "host/common/status_or.h"
#include "host/kube/client.h"

#include <rapidjson/document.h>

#include <ctime>
#include <optional>
#include <string>
#include <string_view>

namespace banlieue::runtime {

bool hasFinalizer(const rapidjson::Value& object, const std::string& finalizer);

// metadata.generation, or 0 when absent.
int64_t generationOf(const rapidjson::Value& object);

// metadata.annotations[key], or "" when absent or not a string. Annotation keys hold dots and
// slashes, so they are looked up as one member, never as a json::find path.
std::string annotation(const rapidjson::Value& object, const std::string& key);
// Whether metadata.annotations holds `key`, whatever its value (a marker such as Cluster API's
// paused annotation is often "").
bool hasAnnotation(const rapidjson::Value& object, const std::string& key);
// metadata.labels[key], or "" when absent; looked up as one member, as annotations are.
std::string label(const rapidjson::Value& object, const std::string& key);
// status.conditions[type == `type`], or null.
const rapidjson::Value* condition(const rapidjson::Value& object, const std::string& type);
// The same condition only when its status is "True" (a finished Job's Complete or Failed).
const rapidjson::Value* trueCondition(const rapidjson::Value& object, const std::string& type);

// OK when the object carries (add) or no longer carries (remove) the finalizer afterwards.
// Removing from an object that is already gone is OK. Adding to an object being deleted fails
// with reason ObjectDeleting: the caller's next pass sees the deletion and finalizes instead.
//
// `cached` is the caller's copy of the object (an informer's): the first patch is computed from
// it and guarded by its resourceVersion, and only a conflict (anyone wrote since) reads the
// object from the API server. Its namespace and name say which object. A copy without a
// resourceVersion is read first, as the forms without one always do.
Status addFinalizer(kube::KubeClient& client, const kube::ResourceType& type,
                    const rapidjson::Value& cached, const std::string& finalizer, int attempts = 3);
Status removeFinalizer(kube::KubeClient& client, const kube::ResourceType& type,
                       const rapidjson::Value& cached, const std::string& finalizer,
                       int attempts = 3);
Status addFinalizer(kube::KubeClient& client, const kube::ResourceType& type, const std::string& ns,
                    const std::string& name, const std::string& finalizer, int attempts = 3);
Status removeFinalizer(kube::KubeClient& client, const kube::ResourceType& type,
                       const std::string& ns, const std::string& name, const std::string& finalizer,
                       int attempts = 3);

struct Condition {
  std::string type;
  std::string status;  // True, False, Unknown
  std::string reason;  // CamelCase
  std::string message;
  int64_t observed_generation = 0;
};

// metav1.Condition's rules, which banlieue's CRDs enforce as the built-in kinds do: a reason
// starts with a letter, holds letters, digits, '_', ',' and ':', ends with a letter, digit or
// '_', and has at most 1024 characters; a message has at most 32768.
inline constexpr size_t kMaxConditionReason = 1024;
inline constexpr size_t kMaxConditionMessage = 32768;
bool isConditionReason(std::string_view reason);
// `text` when it is a valid reason; otherwise its words in CamelCase ("vm not found" ->
// "VmNotFound"), or "Unspecified" when nothing is left. For reasons that come from elsewhere
// (plugins, backends, other writers' objects).
std::string conditionReason(const std::string& text);
// `message`, cut to kMaxConditionMessage, or `reason` when it is empty: a 1.20 apiserver turns
// an applied "" into null, which the required message refuses.
std::string conditionMessage(const std::string& message, const std::string& reason);

// Sets `condition` in a status.conditions array (created when absent), its reason passed
// through conditionReason() and its message through conditionMessage(), so the entry always
// has every field metav1.Condition requires. Returns true when anything changed. `now` is
// RFC 3339 (metav1.Time); lastTransitionTime moves only when the status changes.
bool setCondition(rapidjson::Value& conditions, rapidjson::Document::AllocatorType& allocator,
                  const Condition& condition, const std::string& now);

// RFC 3339 UTC with seconds (metav1.Time).
std::string rfc3339Now();
// RFC 3339 UTC with microseconds (metav1.MicroTime: events, leases).
std::string rfc3339MicroNow();
// Unix seconds of an RFC 3339 time (metav1.Time: "2026-01-02T03:04:05Z"), nullopt if malformed.
std::optional<std::time_t> parseRfc3339(const std::string& text);

}  // namespace banlieue::runtime

namespace banlieue::runtime {

// Adds (or refreshes) an ownerReference to `owner` in object.metadata.ownerReferences, keyed by
// the owner's UID. A controller reference also sets blockOwnerDeletion, so foreground deletion
// of the owner waits for it. Refused, as the API server's garbage collector would silently
// ignore it: an owner without a UID, a namespaced owner in another namespace, and a second
// controller reference to a different owner.
Status setOwnerReference(rapidjson::Value& object, rapidjson::Document::AllocatorType& allocator,
                         const rapidjson::Value& owner, bool controller = true);

// The ownerReference with controller: true, or nullptr.
const rapidjson::Value* controllerReference(const rapidjson::Value& object);

}  // namespace banlieue::runtime
