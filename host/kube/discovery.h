// Kind → resource mapping through the API server's discovery documents. banlieue's controller
// and provider runtime handle infrastructure kinds that plugins declare at run time (a third
// party's included), so the plural and scope of a kind cannot be compiled in.
#pragma once

#include "host/common/status_or.h"
#include "host/kube/client.h"

#include <map>
#include <mutex>
#include <string>

namespace banlieue::kube {

// Whether `group` can name an API group: a DNS subdomain in lowercase, or empty (core). The
// apiserver serves no other, so a reference to one is refused before it reaches a path.
bool isApiGroupName(const std::string& group);

// Looks `kind` up in GET /apis/<group>/<version> (or /api/v1). NotFound (reason KindNotServed)
// when the group/version is not served or does not list the kind — a CRD not installed yet;
// InvalidArgument (KindInvalid) when the apiVersion cannot name a group version.
StatusOr<ResourceType> discoverKind(KubeClient& client, const std::string& api_version,
                                    const std::string& kind);

// discoverKind with a cache of successes. Misses are not cached, so a CRD installed later is
// found on the next call. Thread-safe.
class KindResolver {
 public:
  explicit KindResolver(KubeClient& client) : client_(client) {}
  StatusOr<ResourceType> resolve(const std::string& api_version, const std::string& kind);

 private:
  KubeClient& client_;
  std::mutex mu_;
  std::map<std::string, ResourceType> cache_;  // "<apiVersion>/<kind>"
};

}  // namespace banlieue::kube
