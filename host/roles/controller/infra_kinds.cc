#include "host/roles/controller/infra_kinds.h"

#include "host/common/logging.h"

#include <banlieue/sdk/json.h>
#include <banlieue/sdk/uri.h>

namespace banlieue::controller {

InfraKinds::InfraKinds(kube::KubeClient& client, std::string ns,
                       std::function<void(runtime::Informer&)> watch)
    : client_(client), ns_(std::move(ns)), resolver_(client), watch_(std::move(watch)) {}

InfraKinds::~InfraKinds() {
  stop();
}

StatusOr<InfraKind> InfraKinds::ensure(const MachineKind& kind) {
  std::string key = kind.api_version + "/" + kind.kind;
  {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) return it->second.info;
  }
  if (stop_ == nullptr)
    return error(Code::kFailedPrecondition, "NotStarted", "infra kinds are not started");
  auto type = resolver_.resolve(kind.api_version, kind.kind);
  if (!type.ok()) return type.status();
  if (!type->namespaced)
    return error(Code::kInvalidArgument, "InfraKindClusterScoped",
                 key + " is cluster-scoped; an infra machine must live in its VM's namespace");
  // An informer on a kind it may not read would never sync, and every VM would wait for it.
  if (auto allowed = mayWatch(*type, key); !allowed.isOk()) return allowed;

  std::lock_guard lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) return it->second.info;
  Entry entry;
  entry.informer = std::make_unique<runtime::Informer>(
      client_, *type, runtime::InformerOptions{.ns = ns_, .label_selector = kOwnedByLabel});
  if (watch_) watch_(*entry.informer);
  entry.info = InfraKind{.kind = kind, .type = *type, .informer = entry.informer.get()};
  auto* informer = entry.informer.get();
  const auto* stop = stop_;
  entry.thread = std::thread([informer, stop] { informer->run(*stop); });
  common::logger("controller")->info("watching infra kind {} ({})", key, type->plural);
  return entries_.emplace(key, std::move(entry)).first->second.info;
}

Status InfraKinds::mayWatch(const kube::ResourceType& type, const std::string& key) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    if (auto it = denied_.find(key); it != denied_.end() && now - it->second.first < kRecheckDenied)
      return it->second.second;
  }
  static const kube::ResourceType kReview{"authorization.k8s.io", "v1", "selfsubjectaccessreviews",
                                          false};
  for (const char* verb : {"list", "watch"}) {
    rapidjson::Document review(rapidjson::kObjectType);
    auto& a = review.GetAllocator();
    rapidjson::Value attributes(rapidjson::kObjectType);
    attributes.AddMember("group", sdk::json::stringValue(type.group, a), a);
    attributes.AddMember("resource", sdk::json::stringValue(type.plural, a), a);
    attributes.AddMember("verb", rapidjson::StringRef(verb), a);
    if (!ns_.empty()) attributes.AddMember("namespace", sdk::json::stringValue(ns_, a), a);
    rapidjson::Value spec(rapidjson::kObjectType);
    spec.AddMember("resourceAttributes", attributes, a);
    review.AddMember("apiVersion", "authorization.k8s.io/v1", a);
    review.AddMember("kind", "SelfSubjectAccessReview", a);
    review.AddMember("spec", spec, a);
    auto answer = client_.create(kReview, "", sdk::json::serialize(review));
    if (!answer.ok()) return answer.status();  // transient: asked again on the next ensure
    // An apiserver always answers status.allowed; without it nothing says no.
    const auto* allowed = sdk::json::find(&*answer, "status.allowed");
    if (allowed == nullptr || !allowed->IsBool() || allowed->GetBool()) continue;
    Status refused =
        error(Code::kPermissionDenied, "KindNotPermitted",
              "the controller may not " + std::string(verb) + " " + type.plural + "." + type.group +
                  ": apply the backend's ClusterRoles (`banlieue plugin manifests`; they aggregate "
                  "into banlieue-controller)");
    common::logger("controller")->warn("infra kind {}: {}", key, refused.message());
    std::lock_guard lock(mu_);
    denied_[key] = {now, refused};
    return refused;
  }
  std::lock_guard lock(mu_);
  denied_.erase(key);
  return Status::ok();
}

std::vector<InfraKind> InfraKinds::known() const {
  std::lock_guard lock(mu_);
  std::vector<InfraKind> out;
  for (const auto& [key, entry] : entries_) out.push_back(entry.info);
  return out;
}

void InfraKinds::stop() {
  std::lock_guard lock(mu_);
  for (auto& [key, entry] : entries_)
    if (entry.thread.joinable()) entry.thread.join();
  entries_.clear();
}

StatusOr<std::string> preferredApiVersion(kube::KubeClient& client, const std::string& group) {
  // A group no apiserver can serve is not served: callers treat it as any group without a
  // version, and nothing of it reaches the request path.
  if (group.empty() || !kube::isApiGroupName(group)) {
    return error(Code::kNotFound, "KindNotServed",
                 "'" + group + "' is not an API group name, so no API server serves it");
  }
  auto doc = client.getDiscovery("/apis/" + sdk::pathSegment(group));
  if (!doc.ok()) return doc.status();
  auto version = sdk::json::string(&*doc, "preferredVersion.groupVersion");
  if (!version)
    return error(Code::kNotFound, "KindNotServed",
                 "API group " + group + " has no preferred version");
  return std::string(*version);
}

}  // namespace banlieue::controller
