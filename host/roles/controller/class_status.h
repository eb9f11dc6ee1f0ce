// VMClass status: which Providers can serve the class. A failure domain serves it when its
// storage classes, network classes, features and firmware satisfy the class (the scheduler's
// class filters, scheduler.h); a Provider serves it through any such failure domain. The
// status lists them with their failure domains and counts them (a printer column), and its
// Ready condition says either how many serve it or, when none does, what each one lacks — the
// question a VM's NoProviderMatched leaves a platform engineer with.
#pragma once

#include "host/api/provider.h"
#include "host/api/vm_class.h"
#include "host/kube/client.h"
#include "host/runtime/controller.h"
#include "host/runtime/informer.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace banlieue::controller {

// The status a class should have with these Providers (any order; the result is sorted).
// Conditions carry no lastTransitionTime: the reconciler keeps the old one when the status
// did not change.
api::VMClassStatus classStatus(const api::VMClass& vm_class,
                               const std::vector<api::Provider>& providers);

// Whether `wanted` must be written. The class cache lags the apiserver: right after a write it
// may still show the status from before it, and a wanted status equal to that older one would
// be skipped while the newer write stood. So the status this reconciler wrote last counts too
// (when there is one): the write is skipped only when the cache and the last write both agree.
bool classStatusWriteNeeded(const api::VMClassStatus& wanted, const api::VMClassStatus& cached,
                            const api::VMClassStatus* last_written);

// Writes each VMClass's status (server-side apply of the status subresource), only when it
// changed. Cluster-wide only: a controller confined to one namespace sees that namespace's
// Providers and would overwrite what the others computed, so the manager does not run it then.
class ClassStatusReconciler final : public runtime::Reconciler {
 public:
  ClassStatusReconciler(kube::KubeClient& client, runtime::Informer& classes,
                        runtime::Informer& providers)
      : client_(client), classes_(classes), providers_(providers) {}
  runtime::Result reconcile(const runtime::Request& request) override;

 private:
  kube::KubeClient& client_;
  runtime::Informer& classes_;
  runtime::Informer& providers_;
  std::mutex written_mutex_;
  std::map<std::string, api::VMClassStatus> last_written_;  // by class name
};

}  // namespace banlieue::controller
