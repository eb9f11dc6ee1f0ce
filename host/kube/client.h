// The Kubernetes API as banlieue's roles use it: typed resource addresses, CRUD, patches,
// server-side apply and watch, with API errors as Status values (api_error.h).
#pragma once

#include "host/common/clock.h"
#include "host/common/status_or.h"
#include "host/kube/http_transport.h"

#include <rapidjson/document.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace banlieue::kube {

// A kind of resource: group ("" for core), version, plural, and whether it is namespaced.
struct ResourceType {
  std::string group;
  std::string version;
  std::string plural;
  bool namespaced = true;

  std::string apiVersion() const { return group.empty() ? version : group + "/" + version; }
  // /api/v1/namespaces/ns/configmaps/name/status (parts left out when empty), each part one
  // percent-encoded path segment
  std::string path(const std::string& ns, const std::string& name = {},
                   const std::string& subresource = {}) const;
};

namespace resources {
inline const ResourceType kConfigMap{"", "v1", "configmaps", true};
inline const ResourceType kSecret{"", "v1", "secrets", true};
inline const ResourceType kNamespace{"", "v1", "namespaces", false};
inline const ResourceType kServiceAccount{"", "v1", "serviceaccounts", true};
inline const ResourceType kPod{"", "v1", "pods", true};
inline const ResourceType kNode{"", "v1", "nodes", false};
inline const ResourceType kLease{"coordination.k8s.io", "v1", "leases", true};
inline const ResourceType kEvent{"events.k8s.io", "v1", "events", true};
inline const ResourceType kDeployment{"apps", "v1", "deployments", true};
inline const ResourceType kReplicaSet{"apps", "v1", "replicasets", true};
inline const ResourceType kJob{"batch", "v1", "jobs", true};
inline const ResourceType kCustomResourceDefinition{"apiextensions.k8s.io", "v1",
                                                    "customresourcedefinitions", false};
}  // namespace resources

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;  // 0 = server default (everything)
  std::string continue_token;
  std::string resource_version;
};

struct WatchOptions {
  std::string resource_version;  // start after this version (from a list)
  std::string label_selector;
  std::string field_selector;
  // Server-side bound of one watch request. Kept below the transport's idle timeout so a
  // quiet watch ends cleanly instead of timing out (DESIGN.md section 5).
  int timeout_seconds = 240;
  bool allow_bookmarks = true;
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  rapidjson::Document object;
};

enum class PatchType { kMerge, kJson, kStrategicMerge };

struct ApplyOptions {
  std::string field_manager;  // required
  bool force = false;         // take ownership of conflicting fields
  std::string subresource;    // e.g. "status"
};

struct DeleteOptions {
  std::string propagation_policy;  // Foreground, Background, Orphan
  std::string precondition_uid;
  std::string precondition_resource_version;
  std::optional<int64_t> grace_period_seconds;  // 0 = delete now (a kubelet's final delete)
};

class KubeClient {
 public:
  virtual ~KubeClient() = default;

  virtual StatusOr<rapidjson::Document> get(const ResourceType& type, const std::string& ns,
                                            const std::string& name,
                                            const std::string& subresource = {}) = 0;
  // One page; follow `metadata.continue` with ListOptions::continue_token for the next.
  virtual StatusOr<rapidjson::Document> list(const ResourceType& type, const std::string& ns,
                                             const ListOptions& options = {}) = 0;
  virtual StatusOr<rapidjson::Document> create(const ResourceType& type, const std::string& ns,
                                               const std::string& object_json) = 0;
  // PUT; the object's metadata.resourceVersion makes it an optimistic update (409 Conflict).
  virtual StatusOr<rapidjson::Document> update(const ResourceType& type, const std::string& ns,
                                               const std::string& name,
                                               const std::string& object_json,
                                               const std::string& subresource = {}) = 0;
  virtual StatusOr<rapidjson::Document> patch(const ResourceType& type, const std::string& ns,
                                              const std::string& name, PatchType patch_type,
                                              const std::string& patch_json,
                                              const std::string& subresource = {}) = 0;
  // Server-side apply of a complete desired object (JSON is valid apply YAML).
  virtual StatusOr<rapidjson::Document> apply(const ResourceType& type, const std::string& ns,
                                              const std::string& name,
                                              const std::string& object_json,
                                              const ApplyOptions& options) = 0;
  virtual Status remove(const ResourceType& type, const std::string& ns, const std::string& name,
                        const DeleteOptions& options = {}) = 0;
  // One watch request: calls on_event for each event until the server ends the stream,
  // on_event returns false, or cancel becomes true. A 410 Gone (too old a resourceVersion)
  // comes back as an error with reason Gone/Expired: relist.
  virtual Status watch(const ResourceType& type, const std::string& ns, const WatchOptions& options,
                       const std::function<bool(WatchEvent&)>& on_event,
                       const std::atomic<bool>* cancel = nullptr) = 0;
  // GET of a discovery document, e.g. /apis/infrastructure.banlieue.io/v1beta2 (see
  // discovery.h). Clients without discovery answer Unimplemented.
  virtual StatusOr<rapidjson::Document> getDiscovery(const std::string& path) {
    return error(Code::kUnimplemented, "DiscoveryUnsupported", "this client cannot read " + path);
  }
  // The last `tail_lines` lines of a pod's (only) container log, at most `limit_bytes` of
  // them: plain text (the pods/log subresource; RBAC verb get on pods/log).
  virtual StatusOr<std::string> podLogTail(const std::string& ns, const std::string& pod,
                                           int tail_lines, int limit_bytes) {
    return error(Code::kUnimplemented, "PodLogUnsupported",
                 "this client cannot read the log of pod " + ns + "/" + pod);
  }
};

// Bounds every request the current thread makes while it lives: a caller with a deadline of
// its own (a leader renewing its Lease before renewDeadline) passes it down without every
// KubeClient method taking a timeout. Scopes nest; the earliest deadline wins. The real client
// sends with the time left (whole seconds, at least one: the transport keeps one connection
// pool per timeout) and answers DeadlineExceeded without sending once it has passed. Watches
// are not bounded by it. Fakes read it through current() to simulate a hanging server.
class RequestDeadline {
 public:
  explicit RequestDeadline(std::chrono::milliseconds budget);
  ~RequestDeadline();
  RequestDeadline(const RequestDeadline&) = delete;
  RequestDeadline& operator=(const RequestDeadline&) = delete;

  // The innermost deadline of this thread; time_point::max() when none is set.
  static std::chrono::steady_clock::time_point current();

 private:
  std::chrono::steady_clock::time_point previous_;
};

// Client-side flow control, as client-go's QPS/Burst: requests wait for a token from a bucket
// refilled at `qps` and holding at most `burst`. qps <= 0 (the default) disables it: the API
// server's priority and fairness protects it from every client at once, and a role's requests
// in flight are bounded by its workers (docs/adr/0048; controller-runtime dropped its default
// limit in 2025 on the same grounds). A limit that bound the roles before made them converge
// at its pace instead of the API server's (ADR 0019: 20/s, then 50/s).
struct ClientOptions {
  double qps = 0;
  int burst = 100;
  // The clock the throttle refills and waits on; null means common::SteadyClock (tests pass
  // a common::FakeClock). Not owned: it must outlive the client.
  common::Clock* clock = nullptr;
};

// The real client over an HttpTransport. Every request is counted in client-go's
// rest_client_requests_total{code,method,host} and, watches aside, timed in
// rest_client_request_duration_seconds{verb,host}; every write is also counted in
// banlieue_kube_write_requests_total{verb,group,resource,subresource} (verb: create, update,
// patch, apply, delete; group "core" for the core API).
std::unique_ptr<KubeClient> makeKubeClient(std::unique_ptr<HttpTransport> transport,
                                           ClientOptions options = {});

// "/api/<version>" for the core group, "/apis/<group>/<version>" otherwise, each segment
// percent-encoded: the path of a group version's discovery document.
std::string groupVersionPath(const std::string& group, const std::string& version);

}  // namespace banlieue::kube
