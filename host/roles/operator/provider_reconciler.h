// The Provider reconcile of `banlieue operator` (banlieue-spec 4.2): finalizer, class lookup,
// pause, server-side apply of the minted workload, pruning of everything else labelled for
// the Provider (a superseded class's workload, ClusterRoleBinding included), and
// status.workload — never status.conditions, which belong to the provider itself.
#pragma once

#include "host/roles/operator/workload.h"
#include "host/runtime/controller.h"
#include "host/runtime/events.h"
#include "host/runtime/informer.h"

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace banlieue::roles::provider_operator {

inline constexpr std::chrono::seconds kRequeueDefault{30};

// Index of the Provider informer: spec.providerClassRef.name -> Provider keys.
inline constexpr const char* kClassIndex = "providerClass";
std::vector<std::string> providerClassIndex(const rapidjson::Value& provider);

// The Provider key ("ns/name") a minted object belongs to, from its labels; empty when none.
std::string ownerProviderKey(const rapidjson::Value& minted);

class ProviderReconciler : public runtime::Reconciler {
 public:
  ProviderReconciler(kube::KubeClient& client, runtime::Informer& providers,
                     runtime::Informer& classes, runtime::Informer& deployments,
                     runtime::EventRecorder& events, WorkloadOptions options);

  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  // Deletes every minted object labelled for the Provider that `keep` does not list, in every
  // namespace; returns the names removed.
  StatusOr<std::vector<std::string>> prune(const std::string& ns, const std::string& name,
                                           const Workload* keep);
  Status applyObject(MintedObject& object);
  // Whether the live object is the one this process last applied for the same desired state,
  // so the write can be skipped: a 1.20 apiserver bumps managedFields (and resourceVersion)
  // on every no-op apply, which would bring watched objects back in an endless loop.
  bool upToDate(const MintedObject& object);
  Status applyStatus(const std::string& ns, const std::string& name,
                     const api::ProviderWorkload& workload);
  api::ProviderWorkload observedWorkload(const Workload& workload);

  kube::KubeClient& client_;
  runtime::Informer& providers_;
  runtime::Informer& classes_;
  runtime::Informer& deployments_;
  runtime::EventRecorder& events_;
  WorkloadOptions options_;
  std::mutex applied_mutex_;
  // "plural/ns/name" -> "hash@stamp" of the last apply (stamp: generation for Deployments,
  // whose status changes often, otherwise resourceVersion).
  std::map<std::string, std::string> applied_;
};

}  // namespace banlieue::roles::provider_operator
