// Writes an object's status as one server-side apply of the whole set of fields this process
// owns, and only when that set differs from what the object already shows: a provider at
// rest makes no API writes (the benchmark counts them).
#pragma once

#include "host/common/status_or.h"
#include "host/kube/client.h"
#include "host/runtime/object_helpers.h"

#include <rapidjson/document.h>

#include <string>
#include <vector>

namespace banlieue::roles::provider {

// `status` holds every field the manager owns; fields it owned before and leaves out are
// removed by the apply, which is how a field is cleared (an empty string would not do: the
// 1.20 apiserver stores "" in a custom resource as null). Skipped, and false returned, when
// each field of `status` already equals the object's and — with `whole_status`, for a manager
// that owns the entire status — the object has no field `status` lacks. After a write,
// `written_version` (when given) receives the resourceVersion the apiserver answered with.
StatusOr<bool> applyStatusIfChanged(kube::KubeClient& client, const kube::ResourceType& type,
                                    const rapidjson::Value& object, const rapidjson::Value& status,
                                    const std::string& field_manager, bool whole_status = false,
                                    std::string* written_version = nullptr);

// Which of an object's current conditions a status write keeps besides those it sets.
enum class KeepConditions {
  kAll,          // every one (the runtime's own writes keep the plugin's conditions)
  kOnlyUpdated,  // none: `updates` is the whole list (a reply that sent its conditions)
};

// Copies conditions from `current` (an object's status.conditions) into a fresh array as `keep`
// says, then sets each of `updates`, so lastTransitionTime moves only on a change.
rapidjson::Value mergeConditions(const rapidjson::Value* current,
                                 const std::vector<runtime::Condition>& updates,
                                 rapidjson::Document::AllocatorType& allocator,
                                 KeepConditions keep = KeepConditions::kAll);

}  // namespace banlieue::roles::provider
