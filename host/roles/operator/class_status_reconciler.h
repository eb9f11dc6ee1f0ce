// The ProviderClass status controller of `banlieue operator`: how many Providers reference
// the class, whether it is usable (Ready, see class_readiness.h), whether it is Paused, and
// status.machineKind for the controller. Applied with server-side apply; conditions keep
// their lastTransitionTime until their status changes.
#pragma once

#include "host/roles/operator/class_readiness.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"

#include <chrono>

namespace banlieue::roles::provider_operator {

class ClassStatusReconciler : public runtime::Reconciler {
 public:
  ClassStatusReconciler(kube::KubeClient& client, runtime::Informer& classes,
                        runtime::Informer& providers, PluginDirectories plugin_dirs,
                        std::chrono::seconds resync);

  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  StatusOr<bool> clusterRoleExists(const std::string& backend);

  kube::KubeClient& client_;
  runtime::Informer& classes_;
  runtime::Informer& providers_;
  PluginDirectories plugin_dirs_;
  std::chrono::seconds resync_;
};

}  // namespace banlieue::roles::provider_operator
