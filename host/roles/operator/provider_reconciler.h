// The Provider reconcile of `banlieue operator` (banlieue-spec 4.2): finalizer, class lookup,
// pause, server-side apply of the minted workload, pruning of everything else labelled for
// the Provider (a superseded class's workload, ClusterRoleBinding included), and
// status.workload — never status.conditions, which belong to the provider itself.
#pragma once

#include "host/kube/discovery.h"
#include "host/roles/operator/class_readiness.h"
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

// How often a Provider or ProviderClass is reconciled again with nothing changed: a safety net
// (watches bring every change at once), overridden by `operator --resync-seconds`.
inline constexpr std::chrono::seconds kRequeueDefault{30};
// How often a Provider being deleted looks again at what still needs its workload.
inline constexpr std::chrono::seconds kDependentsPoll{5};

// Index of the Provider informer: spec.providerClassRef.name -> Provider keys.
inline constexpr const char* kClassIndex = "providerClass";
std::vector<std::string> providerClassIndex(const rapidjson::Value& provider);

// The Provider key ("ns/name") a minted object belongs to, from its labels; empty when none.
std::string ownerProviderKey(const rapidjson::Value& minted);

class ProviderReconciler : public runtime::Reconciler {
 public:
  ProviderReconciler(kube::KubeClient& client, runtime::Informer& providers,
                     runtime::Informer& classes, runtime::Informer& deployments,
                     runtime::EventRecorder& events, WorkloadOptions options,
                     PluginDirectories plugin_dirs, std::chrono::seconds resync = kRequeueDefault);

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
  // A Provider being deleted: releases what it serves and keeps the workload until nothing is
  // left (docs/adr/0024), saying what it waits for in its Deleting condition.
  runtime::Result finalize(const runtime::Request& request, const runtime::Object& object,
                           const api::Provider& provider);
  // Whether the Provider's workload can finalize anything: External, or a ready replica.
  bool workloadRunning(const api::Provider& provider);
  // Writes status.conditions[Deleting] under a field manager of its own, so the applies of
  // status.workload (and the provider's own conditions) keep their fields.
  Status applyDeleting(const runtime::Object& object, const std::string& reason,
                       const std::string& message);
  api::ProviderWorkload observedWorkload(const Workload& workload);

  kube::KubeClient& client_;
  runtime::Informer& providers_;
  runtime::Informer& classes_;
  runtime::Informer& deployments_;
  runtime::EventRecorder& events_;
  WorkloadOptions options_;
  PluginDirectories plugin_dirs_;
  std::chrono::seconds resync_;
  kube::KindResolver resolver_;
  std::mutex applied_mutex_;
  // "plural/ns/name" -> "hash@stamp" of the last apply (stamp: generation for Deployments,
  // whose status changes often, otherwise resourceVersion).
  std::map<std::string, std::string> applied_;
};

}  // namespace banlieue::roles::provider_operator
