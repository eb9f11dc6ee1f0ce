#include "host/kube/discovery.h"

namespace banlieue::kube {
namespace {

// Lowercase letters, digits and '-' (and '.' when `dots`), starting and ending alphanumeric;
// empty is accepted (the core group).
bool dnsName(const std::string& text, bool dots) {
  if (text.empty()) return true;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(text.front()) || !alnum(text.back())) return false;
  for (char c : text) {
    if (!alnum(c) && c != '-' && !(dots && c == '.')) return false;
  }
  return true;
}

}  // namespace

bool isApiGroupName(const std::string& group) {
  return dnsName(group, true);
}

StatusOr<ResourceType> discoverKind(KubeClient& client, const std::string& api_version,
                                    const std::string& kind) {
  ResourceType type;
  auto slash = api_version.find('/');
  if (slash == std::string::npos) {
    type.version = api_version;
  } else {
    type.group = api_version.substr(0, slash);
    type.version = api_version.substr(slash + 1);
  }
  // apiVersion comes from users' objects: a group must be a DNS subdomain and a version a DNS
  // label, as the apiserver requires of every group version it serves, so nothing in them
  // (a '/', "..", '?') reaches the discovery path.
  if (!isApiGroupName(type.group) || type.version.empty() || !dnsName(type.version, false) ||
      kind.empty()) {
    return error(Code::kInvalidArgument, "KindInvalid",
                 "'" + api_version + "' kind '" + kind + "' is not a valid apiVersion and kind");
  }
  auto doc = client.getDiscovery(groupVersionPath(type.group, type.version));
  if (!doc.ok()) {
    if (doc.status().code() == Code::kNotFound) {
      return error(Code::kNotFound, "KindNotServed",
                   api_version + " is not served by the API server (is the CRD for " + kind +
                       " installed?)");
    }
    return doc.status();
  }
  const auto& root = *doc;
  if (root.IsObject() && root.HasMember("resources") && root["resources"].IsArray()) {
    for (const auto& r : root["resources"].GetArray()) {
      if (!r.IsObject() || !r.HasMember("kind") || !r["kind"].IsString() || !r.HasMember("name") ||
          !r["name"].IsString()) {
        continue;
      }
      std::string name = r["name"].GetString();
      // Subresources (virtualmachines/status) repeat the kind; the resource itself has no '/'.
      if (kind != r["kind"].GetString() || name.find('/') != std::string::npos) continue;
      type.plural = name;
      type.namespaced =
          r.HasMember("namespaced") && r["namespaced"].IsBool() && r["namespaced"].GetBool();
      return type;
    }
  }
  return error(Code::kNotFound, "KindNotServed",
               api_version + " does not serve kind " + kind + " (is its CRD installed?)");
}

StatusOr<ResourceType> KindResolver::resolve(const std::string& api_version,
                                             const std::string& kind) {
  std::string key = api_version + "/" + kind;
  {
    std::lock_guard lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  auto found = discoverKind(client_, api_version, kind);
  if (found.ok()) {
    std::lock_guard lock(mu_);
    cache_[key] = *found;
  }
  return found;
}

}  // namespace banlieue::kube
