// Server-side apply of bootstrap's objects, in order, with field manager banlieue.io/bootstrap.
// CRDs are waited for until Established before objects of their kinds are applied.
#pragma once

#include "host/kube/client.h"

#include <rapidjson/document.h>

#include <chrono>
#include <vector>

namespace banlieue::roles::bootstrap {

// The REST resource of a manifest object, from its apiVersion and kind.
StatusOr<kube::ResourceType> resourceTypeOf(const rapidjson::Value& object);

struct ApplyReport {
  size_t applied = 0;
  size_t changed = 0;  // objects the apply changed (new, or other than before but for status)
};

StatusOr<ApplyReport> applyAll(kube::KubeClient& client,
                               const std::vector<rapidjson::Document>& objects,
                               std::chrono::seconds crd_timeout = std::chrono::seconds(60));

}  // namespace banlieue::roles::bootstrap
