// What a Provider being deleted still serves (docs/adr/0024-provider-deletion-order.md): its
// infrastructure objects, whose finalizer only its workload removes, after destroying their
// backend machines. The operator deletes them and keeps the workload until none is left.
#pragma once

#include "host/api/provider.h"
#include "host/common/status_or.h"
#include "host/kube/client.h"
#include "host/kube/discovery.h"
#include "host/roles/operator/class_readiness.h"

#include <string>
#include <vector>

namespace banlieue::roles::provider_operator {

// The infrastructure kinds a class's plugin serves: the operator's copy of its manifest's
// `infrastructure` entries, the class's status.machineKind(s) and what its pods published in
// status.plugin (which outlive an unreadable or absent manifest). Empty when none is known.
std::vector<api::InfrastructureKind> servedKinds(const api::ProviderClass& provider_class,
                                                 const PluginDirectories& dirs);

struct Dependents {
  std::vector<std::string> remaining;  // "LibvirtMachine web-1", in listing order
  std::vector<std::string> unknown;    // kinds that could not be listed, with the error
  bool empty() const { return remaining.empty() && unknown.empty(); }
};

// Lists, in the Provider's namespace, the objects of `kinds` that are labelled for the Provider
// and name it in spec.providerRef (what its provider pods reconcile), and asks for the deletion
// of each one not being deleted yet. A kind the API server does not serve holds none.
StatusOr<Dependents> releaseDependents(kube::KubeClient& client, kube::KindResolver& resolver,
                                       const std::string& ns, const std::string& provider,
                                       const std::vector<api::InfrastructureKind>& kinds);

// The Deleting condition's message: what the Provider waits for, and why it may wait forever.
std::string dependentsMessage(const Dependents& dependents, bool workload_running);

}  // namespace banlieue::roles::provider_operator
