// An in-memory KubeClient for unit tests: objects keyed by resource, namespace and name,
// a global resourceVersion counter, optimistic concurrency on update (409 Conflict),
// AlreadyExists / NotFound as the API server reports them, and failure injection. Watch is
// not simulated (use a scripted client for watch behaviour).
#pragma once

#include "host/kube/client.h"

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace banlieue::testing {

class FakeKubeClient final : public kube::KubeClient {
 public:
  using Injector = std::function<Status(const std::string& verb, const std::string& plural)>;
  // When set, called before every request; a non-OK status is returned instead of serving it.
  // Safe to call from any thread, and from inside the injector itself (it runs on a copy).
  void failNext(Injector injector);

  StatusOr<rapidjson::Document> get(const kube::ResourceType& type, const std::string& ns,
                                    const std::string& name,
                                    const std::string& subresource) override;
  StatusOr<rapidjson::Document> list(const kube::ResourceType& type, const std::string& ns,
                                     const kube::ListOptions& options) override;
  StatusOr<rapidjson::Document> create(const kube::ResourceType& type, const std::string& ns,
                                       const std::string& object_json) override;
  StatusOr<rapidjson::Document> update(const kube::ResourceType& type, const std::string& ns,
                                       const std::string& name, const std::string& object_json,
                                       const std::string& subresource) override;
  StatusOr<rapidjson::Document> patch(const kube::ResourceType& type, const std::string& ns,
                                      const std::string& name, kube::PatchType patch_type,
                                      const std::string& patch_json,
                                      const std::string& subresource) override;
  StatusOr<rapidjson::Document> apply(const kube::ResourceType& type, const std::string& ns,
                                      const std::string& name, const std::string& object_json,
                                      const kube::ApplyOptions& options) override;
  Status remove(const kube::ResourceType& type, const std::string& ns, const std::string& name,
                const kube::DeleteOptions& options) override;
  Status watch(const kube::ResourceType& type, const std::string& ns,
               const kube::WatchOptions& options,
               const std::function<bool(kube::WatchEvent&)>& on_event,
               const std::atomic<bool>* cancel) override;

  int writes() const;
  // Requests started and not yet answered (one blocked in an injector counts): a test on a fake
  // clock moves time only while none is being served, so no request is starved of its budget.
  int inFlight() const;

 private:
  using Key = std::tuple<std::string, std::string, std::string>;
  StatusOr<rapidjson::Document> store(const Key& key, rapidjson::Document object);
  Status injected(const std::string& verb, const std::string& plural);

  std::atomic<int> in_flight_{0};
  std::mutex inject_mutex_;
  Injector fail_next_;
  mutable std::mutex mutex_;
  std::map<Key, std::string> objects_;  // serialized
  int64_t version_ = 100;
  int writes_ = 0;
};

}  // namespace banlieue::testing
