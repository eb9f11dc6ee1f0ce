// The infra kinds the controller handles, learnt at run time: each kind a ProviderClass
// publishes (status.machineKind) is resolved through discovery and gets an informer of its own,
// limited to objects carrying `banlieue.io/owned-by`, whose changes requeue the owning VM.
// Nothing here lists kinds at compile time, so a third party's kind is handled like ours.
#pragma once

#include "host/kube/client.h"
#include "host/kube/discovery.h"
#include "host/roles/controller/infra_builder.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace banlieue::controller {

struct InfraKind {
  MachineKind kind;
  kube::ResourceType type;
  runtime::Informer* informer = nullptr;  // owned by InfraKinds, lives until stop()
  std::string key() const { return kind.api_version + "/" + kind.kind; }
};

class InfraKinds {
 public:
  // `watch` is called with each new informer before it runs (to add the owner watch).
  InfraKinds(kube::KubeClient& client, std::string ns,
             std::function<void(runtime::Informer&)> watch);
  ~InfraKinds();
  InfraKinds(const InfraKinds&) = delete;
  InfraKinds& operator=(const InfraKinds&) = delete;

  // Resolves `kind` and starts its informer on first use. NotFound (reason KindNotServed) when
  // the API server does not serve it; PermissionDenied (reason KindNotPermitted) when this
  // controller may not list and watch it (asked once, again after kRecheckDenied): it cannot
  // have made objects of that kind either. Other errors are transient. Needs start() first.
  StatusOr<InfraKind> ensure(const MachineKind& kind);
  // The kinds started so far.
  std::vector<InfraKind> known() const;

  // Informers started by ensure() run until `stop` is set; stop() then joins them.
  void start(const std::atomic<bool>* stop) { stop_ = stop; }
  void stop();

 private:
  struct Entry {
    InfraKind info;
    std::unique_ptr<runtime::Informer> informer;
    std::thread thread;
  };
  kube::KubeClient& client_;
  std::string ns_;  // empty: all namespaces
  kube::KindResolver resolver_;
  std::function<void(runtime::Informer&)> watch_;
  const std::atomic<bool>* stop_ = nullptr;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
  // Kinds this controller was refused, with when it asked; asked again after kRecheckDenied
  // (the backend's ClusterRoles may be applied later).
  std::map<std::string, std::pair<std::chrono::steady_clock::time_point, Status>> denied_;

  // Whether this controller may list and watch `type` (SelfSubjectAccessReviews).
  Status mayWatch(const kube::ResourceType& type, const std::string& key);
};

inline constexpr std::chrono::seconds kRecheckDenied{30};

// The apiVersion a group serves by preference (GET /apis/<group>), for references that carry
// only apiGroup and kind (status.infrastructureRef).
StatusOr<std::string> preferredApiVersion(kube::KubeClient& client, const std::string& group);

}  // namespace banlieue::controller
